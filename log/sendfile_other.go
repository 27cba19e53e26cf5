//go:build !linux

package log

import (
	"net"
	"os"
)

func sendFile(*net.TCPConn, *os.File, int64, int64) (int64, bool, error) { return 0, false, nil }
