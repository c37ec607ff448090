package proxy

import (
	"os"
	"syscall"
)

// pipeSize is the buffer the proxy asks for on the pipes to and from the
// server: 256 KiB, the size of its read buffer. With Linux's default of
// 64 KiB a large message crosses each pipe in many hand-offs between two
// processes; with the proxy in the path there are twice as many pipes, and
// on a busy machine each hand-off waits for a CPU. It is not more because
// pipe buffers count against the user's pipe-user-pages-soft (64 MiB by
// default), past which every new pipe of that user gets two pages: at
// 256 KiB a host needs over a hundred proxies to get there; 1 MiB measured
// no faster (proxybench).
const pipeSize = 256 << 10

// fSetPipeSz is F_SETPIPE_SZ, the same number on every Linux architecture.
const fSetPipeSz = 0x407

// growPipe asks for a pipeSize buffer on the pipe that f is an end of. It
// is only an optimization: when the kernel refuses (a lower pipe-max-size,
// or the user's pipe-user-pages-soft spent), the pipe stays as it was.
func growPipe(f *os.File) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) {
		syscall.Syscall(syscall.SYS_FCNTL, fd, fSetPipeSz, pipeSize)
	})
}
