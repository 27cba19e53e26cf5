package integration

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/coordinator/group"
)

// Exactly once across leader kills: a consume-transform-produce
// application (kgo's GroupTransactSession) copies an RF 3 topic to another
// while the leaders of the input, the output, the group's
// __consumer_offsets partition and the transactional id's
// __transaction_state partition are killed with SIGKILL in turn (and
// restarted). Every input record appears exactly once in the
// read_committed output.
func TestExactlyOnceAcrossLeaderKills(t *testing.T) {
	if testing.Short() {
		t.Skip("kills brokers of a three-process cluster four times")
	}
	const partitions, total = 3, 20_000
	nodes := newClusterNodes(t, 3)
	procs, start := startClusterProcesses(t, nodes, "transaction.abort.timed.out.transaction.cleanup.interval.ms=200")
	seeds := strings.Join([]string{nodes[0].seed(), nodes[1].seed(), nodes[2].seed()}, ",")
	setup := ctxTimeout(t, 5*time.Minute)
	adm := newAdmin(t, seeds)
	if _, err := adm.CreateTopics(setup, partitions, 3, nil, "eos3-in", "eos3-out"); err != nil {
		t.Fatal(err)
	}
	produceNumbered(t, setup, seeds, "eos3-in", total)

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	loopDone := make(chan error, 1)
	var sessions atomic.Int32
	go func() { loopDone <- transformLoop(ctx, seeds, "eos3-in", "eos3-out", total, &sessions) }()

	// The leaders to kill, in turn: the input's, the output's, the
	// group coordinator's, the transaction coordinator's.
	targets := []struct {
		what      string
		topic     string
		partition func() int32
	}{
		{"the input's leader", "eos3-in", func() int32 { return 0 }},
		{"the output's leader", "eos3-out", func() int32 { return 0 }},
		{"the group coordinator", metadata.ConsumerOffsetsTopic, func() int32 { return group.PartitionFor("eos", 50) }},
		{"the transaction coordinator", metadata.TransactionStateTopic, func() int32 { return group.PartitionFor("eos-copier", 50) }},
	}
	for k, tg := range targets {
		want := int64(total * (k + 1) / (len(targets) + 1))
		for {
			n, err := committedInput(ctx, seeds, "eos", "eos3-in")
			if err == nil && n >= want {
				break
			}
			select {
			case err := <-loopDone:
				t.Fatalf("the loop ended before killing %s: %v", tg.what, err)
			case <-ctx.Done():
				t.Fatalf("no progress to %d before killing %s", want, tg.what)
			case <-time.After(50 * time.Millisecond):
			}
		}
		leader, _ := partitionStateRetry(t, adm, tg.topic, tg.partition())
		i := int(leader - 1)
		procs[i].kill(t)
		start(i)
		procs[i].waitStarted(t)
		t.Logf("killed %s (broker %d, %s-%d) at %d of %d records committed", tg.what, leader, tg.topic, tg.partition(), want, total)
	}
	if err := <-loopDone; err != nil {
		t.Fatal(err)
	}
	t.Logf("%d records copied by %d transactional session(s) across %d leader kills", total, sessions.Load(), len(targets))
	writeEnds(t, seeds, "eos3-out", partitions)
	seen := readCommittedUntilEnd(t, seeds, "eos3-out", partitions, 5*time.Minute)
	var missing, dups []string
	for i := range total {
		switch n := seen[strconv.Itoa(i)]; {
		case n == 0:
			missing = append(missing, strconv.Itoa(i))
		case n > 1:
			dups = append(dups, fmt.Sprintf("%d×%d", i, n))
		}
	}
	if len(missing) > 0 || len(dups) > 0 {
		t.Fatalf("%d records missing (first %v), %d duplicated (first %v)", len(missing), first(missing), len(dups), first(dups))
	}
}

func first(s []string) []string { return s[:min(len(s), 5)] }
