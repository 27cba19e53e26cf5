package log

import (
	"errors"
	"net"
	"os"
	"syscall"
)

// sendFile sends size bytes of f from pos to c with sendfile(2), passing
// the offset explicitly so f's file position is never used. handled is
// false if nothing was sent and the caller should fall back to a copy.
func sendFile(c *net.TCPConn, f *os.File, pos, size int64) (written int64, handled bool, err error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, false, nil
	}
	fc, err := f.SyscallConn()
	if err != nil {
		return 0, false, nil
	}
	off := pos
	remain := size
	var werr, serr error
	// Control keeps f's descriptor valid while sendfile runs.
	cerr := fc.Control(func(infd uintptr) {
		werr = rc.Write(func(outfd uintptr) bool {
			for remain > 0 {
				chunk := min(remain, 1<<30)
				n, err := syscall.Sendfile(int(outfd), int(infd), &off, int(chunk))
				if n > 0 {
					remain -= int64(n)
					written += int64(n)
				}
				switch {
				case errors.Is(err, syscall.EAGAIN):
					return false // wait until writable, then call again
				case errors.Is(err, syscall.EINTR):
					continue
				case err != nil:
					serr = err
					return true
				case n == 0:
					serr = errors.New("log: sendfile wrote nothing: file shorter than the slice")
					return true
				}
			}
			return true
		})
	})
	if cerr != nil {
		return written, written > 0, cerr
	}
	if serr == nil {
		serr = werr
	}
	if serr != nil {
		if written == 0 && (errors.Is(serr, syscall.EINVAL) || errors.Is(serr, syscall.ENOSYS)) {
			return 0, false, nil
		}
		return written, true, &net.OpError{Op: "sendfile", Net: "tcp", Addr: c.RemoteAddr(), Err: serr}
	}
	return written, true, nil
}
