package oracle

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"unicode"

	"github.com/hoist-mcp/hoist/jsontext"
)

// keyFormat is the version of the key's own shape (keyTree); it changes
// only if that shape does.
const keyFormat = "1"

// request returns the chat-completions request for q: the two messages and
// the parameters that make a yes/no answer cheap to read. Temperature 0
// makes the answer repeatable, which is what makes caching it honest;
// two tokens leave room for a blank one before the answer's first word;
// top_logprobs carries the yes and no tokens' probabilities.
func request(model string, q Question) map[string]any {
	return map[string]any{
		"model": model,
		"messages": []any{
			map[string]any{"role": "system", "content": q.System},
			map[string]any{"role": "user", "content": q.Prompt},
		},
		"max_tokens":   json.Number("2"),
		"temperature":  json.Number("0"),
		"logprobs":     true,
		"top_logprobs": json.Number("5"),
	}
}

// RequestBody is the request's JSON (request), as jev sends it: canonical
// (members sorted), so the bytes sent are the bytes hashed.
func RequestBody(model string, q Question) []byte {
	return jsontext.AppendValue(nil, request(model, q), jsontext.HTML)
}

// Key returns the cache key of q asked of model: the SHA-256, in hex, of
// the canonical JSON (jsontext) of the request (model, messages and
// parameters) with the prompt's version beside it, and the whole call when
// the prompt shows it clipped. The URL is not part of
// it: the same model behind another address gives the same answer.
func Key(model string, q Question) string {
	tree := map[string]any{
		"hoist_oracle_key": json.Number(keyFormat),
		"prompt":           q.Version,
		"request":          request(model, q),
	}
	if q.clipped != "" {
		// The prompt shows a call clipped: the whole call keys the answer
		// (a short call's key is as it always was).
		tree["clipped_call"] = q.clipped
	}
	sum := sha256.Sum256(jsontext.AppendValue(nil, tree, jsontext.HTML))
	return hex.EncodeToString(sum[:])
}

// Reading is P(yes) as read from the model's answer.
type Reading struct {
	P    float64
	From Source
	Word string // "yes" or "no": the answer's first word ("" when the top token was neither)
}

// ReadAnswer reads P(yes) from a chat-completions response: from the log-
// probabilities of the first answer token that is not blank, when the
// response has them and they name a yes or a no, else from the first word
// of the answer's text.
func ReadAnswer(body []byte) (Reading, error) {
	if !jsontext.Valid(body) || jsontext.Kind(body) != '{' {
		return Reading{}, errors.New("the model server's answer is not a JSON object")
	}
	choices, _ := jsontext.Lookup(body, "choices")
	var choice []byte
	if jsontext.Kind(choices) == '[' {
		for el := range jsontext.Elements(choices) {
			choice = el
			break
		}
	}
	if jsontext.Kind(choice) != '{' {
		return Reading{}, errors.New("the model server's answer has no choices")
	}
	if lp, ok := jsontext.Lookup(choice, "logprobs"); ok && jsontext.Kind(lp) == '{' {
		if r, ok := fromLogprobs(lp); ok {
			return r, nil
		}
	}
	var text string
	if msg, ok := jsontext.Lookup(choice, "message"); ok && jsontext.Kind(msg) == '{' {
		if c, ok := jsontext.Lookup(msg, "content"); ok && jsontext.Kind(c) == '"' {
			text = jsontext.Unquote(c)
		}
	}
	switch yesNo(firstWord(text)) {
	case 1:
		return Reading{P: 1, From: FromText, Word: "yes"}, nil
	case -1:
		return Reading{P: 0, From: FromText, Word: "no"}, nil
	}
	if strings.TrimSpace(text) == "" {
		return Reading{}, errors.New("the model answered nothing")
	}
	return Reading{}, errors.New("the model answered neither yes nor no")
}

// fromLogprobs reads P(yes) from a choice's logprobs object: the first
// token that is not blank, with its alternatives (top_logprobs), gives
// P(yes) = Σ p(yes tokens) / Σ p(yes and no tokens). ok is false when
// there is no such token or none of its alternatives is a yes or a no.
func fromLogprobs(lp []byte) (Reading, bool) {
	content, _ := jsontext.Lookup(lp, "content")
	if jsontext.Kind(content) != '[' {
		return Reading{}, false
	}
	for tok := range jsontext.Elements(content) {
		chosen, logp, ok := tokenLogprob(tok)
		if !ok || strings.TrimSpace(chosen) == "" {
			continue
		}
		seen := map[string]bool{}
		var yes, no float64
		add := func(t string, logp float64) {
			if seen[t] {
				return
			}
			seen[t] = true
			switch yesNo(t) {
			case 1:
				yes += math.Exp(logp)
			case -1:
				no += math.Exp(logp)
			}
		}
		add(chosen, logp)
		if top, ok := jsontext.Lookup(tok, "top_logprobs"); ok && jsontext.Kind(top) == '[' {
			for alt := range jsontext.Elements(top) {
				if t, logp, ok := tokenLogprob(alt); ok {
					add(t, logp)
				}
			}
		}
		if yes+no <= 0 || math.IsNaN(yes+no) {
			return Reading{}, false
		}
		r := Reading{P: yes / (yes + no), From: FromLogprobs}
		switch yesNo(chosen) {
		case 1:
			r.Word = "yes"
		case -1:
			r.Word = "no"
		}
		return r, true
	}
	return Reading{}, false
}

// tokenLogprob reads {"token": …, "logprob": …}.
func tokenLogprob(obj []byte) (token string, logp float64, ok bool) {
	if jsontext.Kind(obj) != '{' {
		return "", 0, false
	}
	t, ok1 := jsontext.Lookup(obj, "token")
	l, ok2 := jsontext.Lookup(obj, "logprob")
	if !ok1 || !ok2 || jsontext.Kind(t) != '"' {
		return "", 0, false
	}
	logp, err := strconv.ParseFloat(string(l), 64)
	if err != nil || logp > 0 {
		return "", 0, false
	}
	return jsontext.Unquote(t), logp, true
}

// firstWord returns the letters that begin text's first word, past any
// blank or punctuation before it ("**Yes**." gives "Yes").
func firstWord(text string) string {
	start := strings.IndexFunc(text, unicode.IsLetter)
	if start < 0 {
		return ""
	}
	rest := text[start:]
	if end := strings.IndexFunc(rest, func(r rune) bool { return !unicode.IsLetter(r) }); end >= 0 {
		rest = rest[:end]
	}
	return rest
}

// yesNo classifies a token or a word: 1 for yes, -1 for no, 0 for
// neither. Case, blanks and punctuation around it do not count, nor the
// word-start markers of SentencePiece (▁) and byte-level BPE (Ġ) that
// some servers leave in token texts.
func yesNo(s string) int {
	s = strings.TrimLeft(s, " \t\n\r▁Ġ")
	s = strings.TrimFunc(s, func(r rune) bool { return !unicode.IsLetter(r) })
	switch strings.ToLower(s) {
	case "yes":
		return 1
	case "no":
		return -1
	}
	return 0
}

// ServerMessage returns the message of an OpenAI-style error answer,
// {"error": {"message": …}} or {"message": …}, or "".
func ServerMessage(body []byte) string {
	if !jsontext.Valid(body) || jsontext.Kind(body) != '{' {
		return ""
	}
	obj := body
	if e, ok := jsontext.Lookup(body, "error"); ok {
		switch jsontext.Kind(e) {
		case '{':
			obj = e
		case '"':
			return strings.TrimSpace(jsontext.Unquote(e))
		}
	}
	if m, ok := jsontext.Lookup(obj, "message"); ok && jsontext.Kind(m) == '"' {
		return strings.TrimSpace(jsontext.Unquote(m))
	}
	return ""
}
