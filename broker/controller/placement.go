package controller

import (
	"cmp"
	"math/rand/v2"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/broker/metadata"
)

// Replica placement as Kafka's StripedReplicaPlacer does it: brokers are
// grouped by rack; each partition's first replica (its preferred leader) is
// an unfenced broker, taken from the racks in turn, and the other replicas
// come from the following racks, so that replicas of a partition spread
// over racks and leaders spread over brokers. Fenced brokers are used only
// for non-leader replicas, when unfenced ones run out. A random start keeps
// topics from all starting on the same broker.

// placeReplicas returns the replicas of n partitions with rf replicas each.
func placeReplicas(im *metadata.Image, rnd *rand.Rand, n, rf int) ([][]int32, error) {
	racks := newRackList(im, rnd)
	if rf <= 0 {
		return nil, apierr.Errorf(kerr.InvalidReplicationFactor, "Unable to replicate the partition %d time(s): the replication factor must be positive.", rf)
	}
	if racks.unfenced == 0 {
		return nil, apierr.Errorf(kerr.InvalidReplicationFactor, "Unable to replicate the partition %d time(s): All brokers are currently fenced.", rf)
	}
	if rf > racks.total {
		return nil, apierr.Errorf(kerr.InvalidReplicationFactor, "Unable to replicate the partition %d time(s): The target replication factor of %d cannot be reached because only %d broker(s) are registered.", rf, rf, racks.total)
	}
	out := make([][]int32, n)
	for i := range out {
		out[i] = racks.place(rf)
	}
	return out, nil
}

// brokerRing hands out brokers in a rotating order; a new round (epoch)
// starts one further along, so that successive partitions rotate.
type brokerRing struct {
	ids           []int32
	index, offset int
	epoch         int
}

func (r *brokerRing) init(rnd *rand.Rand) {
	if len(r.ids) > 0 {
		slices.Sort(r.ids)
		r.offset = rnd.IntN(len(r.ids))
	}
}

func (r *brokerRing) shuffle(rnd *rand.Rand) {
	rnd.Shuffle(len(r.ids), func(i, j int) { r.ids[i], r.ids[j] = r.ids[j], r.ids[i] })
}

// next returns the next broker of this round, or -1 when the round has
// used them all.
func (r *brokerRing) next(epoch int) int32 {
	if len(r.ids) == 0 {
		return -1
	}
	if r.epoch != epoch {
		r.epoch, r.index = epoch, 0
		r.offset = (r.offset + 1) % len(r.ids)
	}
	if r.index >= len(r.ids) {
		return -1
	}
	b := r.ids[(r.index+r.offset)%len(r.ids)]
	r.index++
	return b
}

type rack struct{ fenced, unfenced brokerRing }

func (r *rack) next(epoch int) int32 {
	if b := r.unfenced.next(epoch); b >= 0 {
		return b
	}
	return r.fenced.next(epoch)
}

type rackList struct {
	rnd             *rand.Rand
	names           []string // "" is "no rack", sorted first
	racks           map[string]*rack
	total, unfenced int
	epoch, offset   int
}

func newRackList(im *metadata.Image, rnd *rand.Rand) *rackList {
	l := &rackList{rnd: rnd, racks: map[string]*rack{}}
	for _, b := range im.SortedBrokers() {
		if b.InControlledShutdown {
			continue
		}
		name := ""
		if b.Rack != nil {
			name = "\x00" + *b.Rack // sorts after "no rack", as Kafka's Optional comparator
		}
		rk := l.racks[name]
		if rk == nil {
			rk = &rack{}
			l.racks[name] = rk
			l.names = append(l.names, name)
		}
		if b.Fenced {
			rk.fenced.ids = append(rk.fenced.ids, b.ID)
		} else {
			rk.unfenced.ids = append(rk.unfenced.ids, b.ID)
			l.unfenced++
		}
		l.total++
	}
	for _, rk := range l.racks {
		rk.fenced.init(rnd)
		rk.unfenced.init(rnd)
	}
	slices.SortFunc(l.names, cmp.Compare[string])
	if len(l.names) > 0 {
		l.offset = rnd.IntN(len(l.names))
	}
	return l
}

func (l *rackList) place(rf int) []int32 {
	// After as many partitions as unfenced brokers, shuffle so that the
	// same assignments do not repeat (not for one broker: it would loop).
	if l.epoch == l.unfenced && l.unfenced > 1 {
		l.rnd.Shuffle(len(l.names), func(i, j int) { l.names[i], l.names[j] = l.names[j], l.names[i] })
		for _, rk := range l.racks {
			rk.fenced.shuffle(l.rnd)
			rk.unfenced.shuffle(l.rnd)
		}
		l.epoch = 0
	}
	if l.offset == len(l.names) {
		l.offset = 0
	}
	replicas := make([]int32, 0, rf)
	first := l.offset
	for {
		if b := l.racks[l.names[first]].unfenced.next(l.epoch); b >= 0 {
			replicas = append(replicas, b)
			break
		}
		first = (first + 1) % len(l.names)
	}
	ri := l.offset
	for len(replicas) < rf {
		var b int32 = -1
		for b < 0 {
			if ri == first {
				first = -1 // the first replica's rack is skipped once
			} else {
				b = l.racks[l.names[ri]].next(l.epoch)
			}
			ri = (ri + 1) % len(l.names)
		}
		replicas = append(replicas, b)
	}
	l.epoch++
	l.offset++
	return replicas
}
