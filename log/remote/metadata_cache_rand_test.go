package remote

import (
	"math/rand/v2"
	"testing"
)

// TestRemoteLogMetadataCacheRandom applies random events and checks the
// cache against a model of segment states and the invariants of lookups.
func TestRemoteLogMetadataCacheRandom(t *testing.T) {
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 1))
		c := NewRemoteLogMetadataCache()
		model := map[RemoteLogSegmentId]*RemoteLogSegmentMetadata{}
		var ids []RemoteLogSegmentId
		for range 300 {
			if len(ids) == 0 || rng.IntN(3) == 0 {
				start := int64(rng.IntN(10)) * 100
				e := int32(rng.IntN(3))
				epochs := map[int32]int64{e: start}
				if rng.IntN(2) == 0 {
					epochs[e+1] = start + 50
				}
				m := metaTestSeg(start, start+99, epochs)
				if err := c.AddCopyInProgressSegment(m); err != nil {
					t.Fatal(err)
				}
				model[m.ID] = m.Clone()
				ids = append(ids, m.ID)
				continue
			}
			id := ids[rng.IntN(len(ids))]
			to := RemoteLogSegmentState(rng.IntN(4))
			err := c.UpdateRemoteLogSegmentMetadata(RemoteLogSegmentMetadataUpdate{ID: id, State: to})
			m, held := model[id]
			switch {
			case !held && err == nil:
				t.Fatalf("seed %d: update of removed segment accepted", seed)
			case held && m.State.ValidTransition(to) != (err == nil):
				t.Fatalf("seed %d: %s → %s: err %v", seed, m.State, to, err)
			case held && err == nil:
				m.State = to
				if to == DeleteSegmentFinished {
					delete(model, id)
				}
			}
		}
		if got := c.ListRemoteLogSegments(); len(got) != len(model) {
			t.Fatalf("seed %d: %d listed, model holds %d", seed, len(got), len(model))
		}
		unref := map[RemoteLogSegmentId]bool{}
		for _, m := range c.UnreferencedSegments() {
			unref[m.ID] = true
		}
		for id, m := range model {
			if m.State != CopySegmentFinished && !unref[id] {
				t.Fatalf("seed %d: %s in %s not unreferenced", seed, id, m.State)
			}
		}
		for e := range int32(4) {
			for off := int64(0); off < 1100; off += 7 {
				m, ok := c.RemoteLogSegmentMetadata(e, off)
				if !ok {
					continue
				}
				start, has := m.SegmentLeaderEpochs[e]
				end := m.EndOffset
				if next, ok := m.SegmentLeaderEpochs[e+1]; ok {
					end = next - 1
				}
				if m.State != CopySegmentFinished || !has || off < start || off > end || unref[m.ID] {
					t.Fatalf("seed %d: epoch %d offset %d found %+v", seed, e, off, m)
				}
			}
		}
	}
}
