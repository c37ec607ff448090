// Package oracletest runs a fake OpenAI-compatible chat-completions
// server on loopback, for the tests of the oracle and of what asks it
// (the proxy's judge, hoist confirm): the hosted model cannot run here, so
// this stands in for it on the wire. It answers yes or no with or without
// token log-probabilities, hangs, fails, rate-limits, and records every
// request it was sent, headers and body, so a test can see what left the
// process (and that the key went only in the Authorization header).
//
// Tests only: it imports testing and net/http/httptest, and deptest keeps
// it out of every program.
package oracletest

import (
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Response is one answer the server gives.
type Response struct {
	// Status is the HTTP status; 0 is 200.
	Status int
	// RetryAfter, when set, is sent as the Retry-After header.
	RetryAfter string
	// Text is the answer's content, such as "Yes" or "No."; "" with a
	// 200 and no Body answers "Yes" or "No" by PYes.
	Text string
	// Logprobs adds the first token's log-probabilities: Yes with
	// probability PYes, No with the rest.
	Logprobs bool
	PYes     float64
	// Body, when set, is sent as it is in place of a built answer.
	Body string
	// Redirect, when set, answers 307 to that URL.
	Redirect string
	// Hang holds the request until the client gives up (its context ends)
	// or the test ends: a slow server.
	Hang bool
	// Wait, when set, holds the request (Hung receives it) until Wait is
	// closed, then answers as the other fields say: a slow model that the
	// test lets answer when it chooses. A client that gives up first gets
	// nothing.
	Wait <-chan struct{}
}

// Yes and No are the plain answers of a server that returns no
// log-probabilities.
var (
	Yes = Response{Text: "Yes"}
	No  = Response{Text: "No"}
)

// WithLogprobs returns the answer of a server that returns
// log-probabilities, P(yes) being p.
func WithLogprobs(p float64) Response { return Response{Logprobs: true, PYes: p} }

// Request is one request the server received.
type Request struct {
	Method string
	Path   string
	Query  string
	Header http.Header
	Body   []byte
}

// Server is the fake. Its methods are safe for concurrent use.
type Server struct {
	// URL is the base URL to give the client: http://127.0.0.1:port/v1.
	URL string

	srv     *httptest.Server
	mu      sync.Mutex
	queue   []Response
	dflt    Response
	reqs    []Request
	hung    chan Request
	release chan struct{}
}

// Start starts a server on loopback that answers Yes until told otherwise
// (Push, Default), and stops it when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{dflt: Yes, hung: make(chan Request, 64), release: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL + "/v1"
	t.Cleanup(s.srv.Close)
	// Cleanups run last first: release hung requests, then close.
	t.Cleanup(func() { close(s.release) })
	return s
}

// Push queues responses, given in order to the next requests; once they
// are used up, the default answers.
func (s *Server) Push(rs ...Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, rs...)
}

// Default sets the response given when the queue is empty.
func (s *Server) Default(r Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dflt = r
}

// Requests returns the requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Hung receives each request that a Hang or Wait response holds, once it is held:
// a test waits on it before it fires a timeout, so the timeout meets a
// request in flight.
func (s *Server) Hung() <-chan Request { return s.hung }

func (s *Server) next() Response {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) > 0 {
		r := s.queue[0]
		s.queue = s.queue[1:]
		return r
	}
	return s.dflt
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body}
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	s.mu.Unlock()

	// What a real server checks first: the route and the request's shape.
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		writeError(w, http.StatusNotFound, "no route "+r.Method+" "+r.URL.Path)
		return
	}
	var cr struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &cr); err != nil || cr.Model == "" || len(cr.Messages) == 0 {
		writeError(w, http.StatusBadRequest, "want a chat-completions request with a model and messages")
		return
	}

	resp := s.next()
	switch {
	case resp.Hang:
		s.hung <- req
		select {
		case <-r.Context().Done():
		case <-s.release:
		}
		return
	case resp.Wait != nil:
		s.hung <- req
		select {
		case <-r.Context().Done():
			return
		case <-s.release:
			return
		case <-resp.Wait:
		}
	case resp.Redirect != "":
		http.Redirect(w, r, resp.Redirect, http.StatusTemporaryRedirect)
		return
	}
	if resp.RetryAfter != "" {
		w.Header().Set("Retry-After", resp.RetryAfter)
	}
	status := resp.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	switch {
	case resp.Body != "":
		io.WriteString(w, resp.Body)
	case status != http.StatusOK:
		json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": http.StatusText(status), "type": "server_error"}})
	default:
		json.NewEncoder(w).Encode(answer(cr.Model, resp))
	}
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error"}})
}

// answer builds a chat-completions answer as the OpenAI API shapes it.
func answer(model string, r Response) map[string]any {
	text := r.Text
	if text == "" {
		text = "No"
		if r.PYes >= 0.5 {
			text = "Yes"
		}
	}
	choice := map[string]any{
		"index":         0,
		"message":       map[string]any{"role": "assistant", "content": text},
		"finish_reason": "length",
	}
	if r.Logprobs {
		yes, no := logp(r.PYes), logp(1-r.PYes)
		chosen := no
		if text == "Yes" {
			chosen = yes
		}
		choice["logprobs"] = map[string]any{"content": []any{map[string]any{
			"token": text, "logprob": chosen,
			"top_logprobs": []any{
				map[string]any{"token": "Yes", "logprob": yes},
				map[string]any{"token": "No", "logprob": no},
			},
		}}}
	} else {
		choice["logprobs"] = nil
	}
	return map[string]any{
		"id": "chatcmpl-fake", "object": "chat.completion", "created": 1790198400, "model": model,
		"choices": []any{choice},
		"usage":   map[string]any{"prompt_tokens": 100, "completion_tokens": 1, "total_tokens": 101},
	}
}

// logp is ln p, kept finite for JSON: a probability of 0 is -9999.
func logp(p float64) float64 {
	if p <= 0 {
		return -9999
	}
	return math.Log(p)
}
