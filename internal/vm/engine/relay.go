package engine

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The relay moves a tunnel's bytes between two TCP sockets with splice(2),
// through a pipe, so they never enter this process. It is the engine's own
// rather than io.Copy's for two reasons. A tunnel waiting for bytes holds
// no pipe: it waits for its socket to be readable first, and takes a pipe
// from the pool only while bytes move, so an idle tunnel holds its two
// sockets and nothing else (io.Copy's splice holds a pipe, two more
// descriptors, for as long as it waits). And each splice asks the
// bandwidth limit first, so the limit holds without copying through user
// space.

// maxSplice is the most one splice moves: the pipe's size.
const maxSplice = 1 << 20

// pipe is a pipe whose buffer the relay splices through.
type pipe struct {
	r, w int
	// data are the bytes in the pipe, not yet spliced out.
	data int
}

// pipes is a small pool of pipes: a burst of tunnels makes more, and
// those beyond the pool's size are closed as soon as they are returned,
// not left for a garbage collection to find.
type pipePool struct {
	mu   sync.Mutex
	free []*pipe
	// open counts the pipes open, in the pool or in use.
	open atomic.Int64
}

const pipePoolSize = 16

var pipes pipePool

func (pp *pipePool) get() (*pipe, error) {
	pp.mu.Lock()
	if n := len(pp.free); n > 0 {
		p := pp.free[n-1]
		pp.free = pp.free[:n-1]
		pp.mu.Unlock()
		return p, nil
	}
	pp.mu.Unlock()
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return nil, os.NewSyscallError("pipe2", err)
	}
	// A larger pipe moves more per splice; a smaller one still works.
	unix.FcntlInt(uintptr(fds[0]), unix.F_SETPIPE_SZ, maxSplice)
	pp.open.Add(1)
	return &pipe{r: fds[0], w: fds[1]}, nil
}

// put returns p; a pipe with bytes left in it (its tunnel broke between
// the two splices) is closed, never reused.
func (pp *pipePool) put(p *pipe) {
	pp.mu.Lock()
	if p.data == 0 && len(pp.free) < pipePoolSize {
		pp.free = append(pp.free, p)
		pp.mu.Unlock()
		return
	}
	pp.mu.Unlock()
	unix.Close(p.r)
	unix.Close(p.w)
	pp.open.Add(-1)
}

// flow is one direction of a tunnel: from src to dst, counted and
// limited.
type flow struct {
	src, dst *net.TCPConn
	// count is called with each piece moved.
	count func(int64)
	limit *bucket
	// idle is how long the tunnel may move nothing either way; last is
	// shared by both directions, so a long download with a quiet upload
	// is not idle.
	idle time.Duration
	last *atomic.Int64
}

// errIdle ends a tunnel through which nothing moved for the idle timeout.
var errIdle = errors.New("idle timeout")

// run moves bytes until src ends (nil), the tunnel is idle (errIdle) or
// either side fails. The read deadline wakes the wait every quarter of
// the idle timeout to look at the tunnel's last activity.
func (f *flow) run() (int64, error) {
	src, err := f.src.SyscallConn()
	if err != nil {
		return 0, err
	}
	dst, err := f.dst.SyscallConn()
	if err != nil {
		return 0, err
	}
	tick := max(f.idle/4, time.Millisecond)
	var total int64
	for {
		f.src.SetReadDeadline(time.Now().Add(tick))
		err := waitReadable(src)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			if time.Since(time.Unix(0, f.last.Load())) < f.idle {
				continue
			}
			return total, errIdle
		}
		if err != nil {
			return total, err
		}
		n, eof, err := f.move(src, dst)
		total += n
		if err != nil {
			return total, err
		}
		if eof {
			return total, nil
		}
	}
}

// busyHold is how long a flow that is moving bytes keeps its pipe while
// it waits for the next ones: a stream's next segment is usually a few
// microseconds away, and waiting with the pipe in hand makes a busy
// tunnel's loop the same as io.Copy's (splice in, splice out, wait);
// after busyHold of silence the pipe goes back to the pool.
const busyHold = 50 * time.Millisecond

// move splices src into dst through a pipe held only while bytes come: it
// returns when src has given nothing for busyHold (or ends, eof), with
// every byte it took out of src written to dst.
func (f *flow) move(src, dst syscall.RawConn) (moved int64, eof bool, err error) {
	p, err := pipes.get()
	if err != nil {
		return 0, false, err
	}
	defer pipes.put(p)
	for {
		want := maxSplice
		if f.limit != nil {
			want = f.limit.take(want)
		}
		var n int
		var serr error
		f.src.SetReadDeadline(time.Now().Add(busyHold))
		rerr := src.Read(func(fd uintptr) bool {
			n, serr = spliceOnce(int(fd), p.w, want)
			return serr != unix.EAGAIN
		})
		if f.limit != nil {
			f.limit.giveBack(want - max(n, 0))
		}
		switch {
		case errors.Is(rerr, os.ErrDeadlineExceeded):
			return moved, false, nil
		case rerr != nil:
			return moved, false, rerr
		case serr != nil:
			return moved, false, os.NewSyscallError("splice", serr)
		case n == 0:
			return moved, true, nil
		}
		p.data += n
		// Counted as taken, before the other side can see them: a
		// client that got its bytes finds them in the counters.
		moved += int64(n)
		f.count(int64(n))
		f.dst.SetWriteDeadline(time.Now().Add(f.idle))
		if err := drain(p, dst); err != nil {
			return moved, false, &writeError{err}
		}
		f.last.Store(time.Now().UnixNano())
	}
}

// writeError is a flow's failure to write to its destination: for the
// tunnel's account, the other side went away, not this one.
type writeError struct{ err error }

func (e *writeError) Error() string { return "writing: " + e.err.Error() }
func (e *writeError) Unwrap() error { return e.err }

// drain splices everything in p into dst, waiting for dst to take it.
func drain(p *pipe, dst syscall.RawConn) error {
	var serr error
	err := dst.Write(func(fd uintptr) bool {
		for p.data > 0 {
			n, e := spliceOnce(p.r, int(fd), p.data)
			if e == unix.EAGAIN {
				return false
			}
			if e != nil {
				serr = e
				return true
			}
			p.data -= n
		}
		return true
	})
	if err != nil {
		return err
	}
	if serr != nil {
		return os.NewSyscallError("splice", serr)
	}
	return nil
}

func spliceOnce(in, out, n int) (int, error) {
	for {
		m, err := unix.Splice(in, nil, out, nil, n, unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
		if err == unix.EINTR {
			continue
		}
		return int(m), err
	}
}

// waitReadable returns once c has a byte to read, its end (EOF) or an
// error, or its read deadline passes, taking nothing out of it: a peek,
// so that the netpoller is asked to wait only when the socket really has
// nothing (an edge-triggered poller would otherwise never wake).
func waitReadable(c syscall.RawConn) error {
	var b [1]byte
	return c.Read(func(fd uintptr) bool {
		_, _, e := unix.Syscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), 1, unix.MSG_PEEK|unix.MSG_DONTWAIT, 0, 0)
		return e != unix.EAGAIN && e != unix.EINTR
	})
}

// copyLimited copies src to dst in user space (plain HTTP bodies, which
// pass through net/http), counted and limited as a tunnel is.
func copyLimited(dst io.Writer, src io.Reader, limit *bucket, count func(int64)) (int64, error) {
	bp := buffers.Get().(*[32 << 10]byte)
	defer buffers.Put(bp)
	buf := bp[:]
	var total int64
	for {
		want := len(buf)
		if limit != nil {
			want = limit.take(want)
		}
		n, rerr := src.Read(buf[:want])
		if limit != nil {
			limit.giveBack(want - n)
		}
		if n > 0 {
			count(int64(n))
			w, werr := dst.Write(buf[:n])
			total += int64(w)
			if werr != nil {
				return total, &writeError{werr}
			}
		}
		if rerr == io.EOF {
			return total, nil
		}
		if rerr != nil {
			return total, rerr
		}
	}
}

var buffers = sync.Pool{New: func() any { return new([32 << 10]byte) }}
