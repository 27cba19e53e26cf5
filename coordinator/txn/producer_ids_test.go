package txn

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
)

func TestProducerIDManager(t *testing.T) {
	var mu sync.Mutex
	var calls int
	fail := false
	m := NewProducerIDManager(func(ctx context.Context, n int) (int64, error) {
		mu.Lock()
		defer mu.Unlock()
		if fail {
			return 0, errors.New("no controller")
		}
		calls++
		return int64(calls) * 10000, nil
	}, slog.New(slog.DiscardHandler))
	defer m.Close()
	// Nothing at hand: TryGenerate starts a fetch; Generate waits for it.
	if _, ok := m.TryGenerate(); ok {
		t.Fatal("an id before any block")
	}
	seen := map[int64]bool{}
	for i := range 2 * ProducerIDBlockSize {
		id, err := m.Generate(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if seen[id] {
			t.Fatalf("id %d handed out twice (at %d)", id, i)
		}
		seen[id] = true
	}
	mu.Lock()
	n := calls
	fail = true
	mu.Unlock()
	if n < 2 || n > 3 {
		t.Fatalf("%d blocks fetched for two blocks' worth of ids (the next one is prefetched)", n)
	}
	// Once the blocks are used up and the controller fails, Generate
	// reports it.
	for {
		if _, err := m.Generate(context.Background()); err != nil {
			break
		}
	}
}
