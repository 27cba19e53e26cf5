package log

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
)

// FileLimitError is why start-up cannot open the logs: the open-file
// limit is too low for them. Each segment holds its .log open (indexes are
// opened only to be read or written), so the logs need one file
// descriptor per segment, plus the connections and the metadata log.
type FileLimitError struct {
	Segments int    // segments in the log dirs: one open file each
	Limit    uint64 // the soft RLIMIT_NOFILE (ulimit -n) in effect, 0 if unknown
	Err      error  // the EMFILE or ENFILE
}

// fileLimitHeadroom is what a broker needs besides its segments:
// connections, the metadata log, checkpoints being written.
const fileLimitHeadroom = 1024

func (e *FileLimitError) Error() string {
	need := e.Segments + fileLimitHeadroom
	limit := "unknown"
	if e.Limit > 0 {
		limit = fmt.Sprint(e.Limit)
	}
	what := "too many open files"
	if errors.Is(e.Err, syscall.ENFILE) {
		what = "too many open files in the system (fs.file-max)"
	}
	return fmt.Sprintf("%s: the logs have %d segments, each holding an open file, so the broker needs about %d file descriptors "+
		"(segments plus %d for connections), and the open-file limit (ulimit -n) is %s; raise it to at least %d (ulimit -n %d, or LimitNOFILE=%d in a systemd unit)",
		what, e.Segments, need, fileLimitHeadroom, limit, need, need*2, need*2)
}

// Unwrap returns the EMFILE or ENFILE.
func (e *FileLimitError) Unwrap() error { return e.Err }

// NewFileLimitError describes an EMFILE or ENFILE met while opening the
// logs of dirs: it counts their segments (fsys nil: the OS) and reads the
// limit.
func NewFileLimitError(fsys FS, dirs []string, err error) *FileLimitError {
	return newFileLimitError(fsys, dirs, err)
}

func newFileLimitError(fsys FS, dirs []string, err error) *FileLimitError {
	if fsys == nil {
		fsys = OSFS{}
	}
	e := &FileLimitError{Err: err}
	e.Limit, _ = openFileLimit()
	for _, dir := range dirs {
		parts, rerr := fsys.ReadDir(dir)
		if rerr != nil {
			continue
		}
		for _, p := range parts {
			if !p.IsDir() {
				continue
			}
			files, rerr := fsys.ReadDir(filepath.Join(dir, p.Name()))
			if rerr != nil {
				continue
			}
			for _, f := range files {
				if strings.HasSuffix(f.Name(), LogFileSuffix) {
					e.Segments++
				}
			}
		}
	}
	return e
}
