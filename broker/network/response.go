package network

import (
	"fmt"
	"io"
	"net"
	"os"
	"syscall"

	"github.com/moldau/moldau/kapi"
)

func release(resp *kapi.Response) {
	if resp != nil && resp.Release != nil {
		resp.Release()
	}
}

// writeResponse writes resp: Buf with its regions spliced in. Bytes in
// memory go out with the parts of Buf around them in one writev(2); file
// regions by writeRegion.
func (c *connection) writeResponse(resp *kapi.Response) error {
	if resp.NoResponse || (len(resp.Buf) == 0 && len(resp.Regions) == 0) {
		return nil
	}
	if !c.armWrite() {
		return errForced
	}
	if len(resp.Regions) == 0 {
		_, err := c.nc.Write(resp.Buf)
		return err
	}
	var pending net.Buffers
	flush := func() error {
		if len(pending) == 0 {
			return nil
		}
		_, err := pending.WriteTo(c.nc)
		pending = pending[:0]
		return err
	}
	pos := 0
	for i := range resp.Regions {
		reg := &resp.Regions[i]
		if reg.At < pos || reg.At > len(resp.Buf) || reg.Len < 0 || (reg.File == nil && int64(len(reg.Bytes)) != reg.Len) {
			return fmt.Errorf("invalid file region %d (at %d, len %d) in a response of %d bytes", i, reg.At, reg.Len, len(resp.Buf))
		}
		if reg.At > pos {
			pending = append(pending, resp.Buf[pos:reg.At])
			pos = reg.At
		}
		if reg.File == nil {
			if reg.Len > 0 {
				pending = append(pending, reg.Bytes)
			}
			continue
		}
		if err := flush(); err != nil {
			return err
		}
		if err := c.writeRegion(reg); err != nil {
			return err
		}
	}
	if pos < len(resp.Buf) {
		pending = append(pending, resp.Buf[pos:])
	}
	return flush()
}

// maxSendfileChunk bounds one sendfile(2) call (Linux caps it near 2 GiB).
const maxSendfileChunk = 1 << 30

// writeRegion writes a file region: sendfile(2) at the region's own offset
// on a TCP connection, else a copy through an io.SectionReader (which also
// leaves the file's shared position alone).
func (c *connection) writeRegion(reg *kapi.FileRegion) error {
	if reg.Len == 0 {
		return nil
	}
	tc, ok := c.nc.(*net.TCPConn)
	if !ok {
		n, err := io.Copy(c.nc, io.NewSectionReader(reg.File, reg.Off, reg.Len))
		if err == nil && n < reg.Len {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	if c.raw == nil {
		raw, err := tc.SyscallConn()
		if err != nil {
			return err
		}
		c.raw = raw
	}
	return sendfile(c.raw, reg.File, reg.Off, reg.Len, &c.server.sendfileBytes)
}

// sendfile writes length bytes of f from offset off to the socket, with
// the explicit offset (the kernel advances our copy of off, not the file's
// position). File.SyscallConn's Control keeps f open meanwhile (unlike
// f.Fd, which would also switch the file to blocking mode). The socket's
// write deadline applies while waiting for room in its buffer.
func sendfile(sock syscall.RawConn, f *os.File, off, length int64, counter interface{ Add(int64) int64 }) error {
	fraw, err := f.SyscallConn()
	if err != nil {
		return err
	}
	remaining := length
	var serr error
	cerr := fraw.Control(func(ffd uintptr) {
		werr := sock.Write(func(sfd uintptr) bool {
			for remaining > 0 {
				n, err := syscall.Sendfile(int(sfd), int(ffd), &off, int(min(remaining, maxSendfileChunk)))
				if n > 0 {
					remaining -= int64(n)
					counter.Add(int64(n))
				}
				switch {
				case err == syscall.EAGAIN:
					return false // wait until writable
				case err == syscall.EINTR:
				case err != nil:
					serr = os.NewSyscallError("sendfile", err)
					return true
				case n == 0:
					serr = fmt.Errorf("sendfile: %s ends %d bytes before the end of the region", f.Name(), remaining)
					return true
				}
			}
			return true
		})
		if serr == nil {
			serr = werr
		}
	})
	if serr != nil {
		return serr
	}
	return cerr
}
