package log

import (
	"path/filepath"
	"testing"
)

// The epoch-cache lookup, case by case; most cases are Kafka's
// LeaderEpochFileCacheTest's.
func TestEpochCacheEndOffsetFor(t *testing.T) {
	type want struct {
		epoch  int32
		offset int64
	}
	undefined := want{UndefinedEpoch, UndefinedEpochOffset}
	cases := []struct {
		name      string
		entries   []EpochEntry
		requested int32
		leo       int64
		want      want
	}{
		{"empty cache", nil, 0, 0, undefined},
		{"empty cache, undefined epoch", nil, UndefinedEpoch, 73, undefined},
		{"undefined epoch", []EpochEntry{{2, 11}, {3, 12}}, UndefinedEpoch, 0, undefined},
		{"latest epoch ends at the log end", []EpochEntry{{2, 10}}, 2, 11, want{2, 11}},
		{"latest epoch, not starting at zero", []EpochEntry{{2, 6}}, 2, 9, want{2, 9}},
		{"latest of several", []EpochEntry{{0, 0}, {1, 0}, {2, 5}}, 2, 10, want{2, 10}},
		{"previous epoch ends where the next starts", []EpochEntry{{1, 11}, {2, 13}, {3, 15}}, 2, 17, want{2, 15}},
		{"first epoch", []EpochEntry{{1, 11}, {2, 13}, {3, 15}}, 1, 17, want{1, 13}},
		{"an empty epoch: the next one starts at the same offset", []EpochEntry{{0, 0}, {1, 0}, {2, 5}}, 0, 10, want{0, 0}},
		{"a gap: the largest epoch below", []EpochEntry{{0, 10}, {2, 13}, {4, 17}}, 1, 0, want{0, 13}},
		{"a gap above an epoch", []EpochEntry{{0, 10}, {2, 13}, {4, 17}}, 3, 0, want{2, 17}},
		{"exact epoch before a gap", []EpochEntry{{0, 10}, {2, 13}, {4, 17}}, 2, 0, want{2, 17}},
		{"below the first epoch: the requested epoch and the first start", []EpochEntry{{5, 11}, {6, 12}, {7, 13}}, 4, 0, want{4, 11}},
		{"below the first epoch, far", []EpochEntry{{5, 11}}, 0, 20, want{0, 11}},
		{"above the latest epoch", []EpochEntry{{2, 100}}, 3, 100, undefined},
		{"above the latest of several", []EpochEntry{{1, 5}, {2, 6}}, 9, 8, undefined},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &leaderEpochCache{entries: tc.entries}
			e, o := c.endOffsetFor(tc.requested, tc.leo)
			if got := (want{e, o}); got != tc.want {
				t.Fatalf("endOffsetFor(%d, leo %d) over %v = %v, want %v", tc.requested, tc.leo, tc.entries, got, tc.want)
			}
		})
	}
}

// Log.EndOffsetForEpoch answers from the cache the appends built, with the
// log end for the latest epoch, and after truncation and a reopen too.
func TestLogEndOffsetForEpoch(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ep-0")
	l := ftOpen(t, dir, 0, nil)
	if e, o := l.EndOffsetForEpoch(0); e != UndefinedEpoch || o != UndefinedEpochOffset {
		t.Fatalf("empty log: %d %d", e, o)
	}
	ftFill(t, l, 3, 1, 1, 3, 3, 5) // epoch 1 at 0, 3 at 6, 5 at 12; end 15
	check := func(l *Log, requested, wantEpoch int32, wantOffset int64) {
		t.Helper()
		if e, o := l.EndOffsetForEpoch(requested); e != wantEpoch || o != wantOffset {
			t.Fatalf("EndOffsetForEpoch(%d) = %d %d, want %d %d", requested, e, o, wantEpoch, wantOffset)
		}
	}
	check(l, 0, 0, 0)
	check(l, 1, 1, 6)
	check(l, 2, 1, 6)
	check(l, 3, 3, 12)
	check(l, 4, 3, 12)
	check(l, 5, 5, 15)
	check(l, 6, UndefinedEpoch, UndefinedEpochOffset)

	// Cut inside epoch 3 (the batch at 9 goes whole): epoch 5 goes, 3
	// becomes the latest and ends at the new log end.
	if _, err := l.TruncateTo(10); err != nil {
		t.Fatal(err)
	}
	check(l, 3, 3, 9)
	check(l, 4, UndefinedEpoch, UndefinedEpochOffset)
	check(l, 5, UndefinedEpoch, UndefinedEpochOffset)
	check(l, 1, 1, 6)

	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = ftOpen(t, dir, 0, nil)
	check(l, 2, 1, 6)
	check(l, 3, 3, 9)
}
