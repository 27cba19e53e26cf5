package controller

import (
	"time"

	"github.com/moldau/moldau/broker/metadata"
)

// Leader balance (Kafka's QuorumController.maybeScheduleNextBalancePartitionLeaders
// and ReplicationControlManager.maybeBalancePartitionLeaders): with
// auto.leader.rebalance.enable, the active controller watches for
// partitions not led by their preferred replica (the first of the
// assignment; the preferredreplicaimbalancecount gauge counts them). When
// there are any and no balance is scheduled, one is scheduled
// leader.imbalance.check.interval.seconds later; it runs a PREFERRED
// election (elect_leaders.go) on up to maxElectionsPerImbalance of them, so
// a preferred replica that is in the ISR and active leads again, and if it
// hit that cap it runs again at once (10 ms later, as Kafka). Then, as in
// Kafka, the next change that leaves an imbalance schedules the next run.
// Losing the leadership cancels what was scheduled.
//
// leader.imbalance.per.broker.percentage is accepted and not used, as in
// Kafka's KRaft controller (only its ZooKeeper controller read it).

const (
	autoLeaderRebalanceConfig     = "auto.leader.rebalance.enable"
	leaderImbalanceIntervalConfig = "leader.imbalance.check.interval.seconds"
	// maxElectionsPerImbalance is Kafka's MAX_ELECTIONS_PER_IMBALANCE.
	maxElectionsPerImbalance = 1000
	// balanceAgainDelay is Kafka's delay for a run scheduled at once.
	balanceAgainDelay = 10 * time.Millisecond
)

// balanceState is Kafka's ImbalanceSchedule.
type balanceState int

const (
	balanceDeferred    balanceState = iota // next run after the interval
	balanceScheduled                       // a run is scheduled
	balanceImmediately                     // next run at once (the last hit the cap)
)

// leaderBalance is the schedule; state is the loop's, arm goes to the
// timer goroutine.
type leaderBalance struct {
	interval time.Duration // 0: auto.leader.rebalance.enable is false
	state    balanceState
	arm      chan time.Duration
}

// startLeaderBalance reads the configs and starts the timer goroutine
// (from Start).
func (c *QuorumController) startLeaderBalance() {
	lb := &c.balance
	lb.arm = make(chan time.Duration, 1)
	if c.cfg.Broker == nil || !c.cfg.Broker.GetBool(autoLeaderRebalanceConfig) {
		return
	}
	lb.interval = time.Duration(c.cfg.Broker.GetLong(leaderImbalanceIntervalConfig)) * time.Second
	if lb.interval <= 0 {
		lb.interval = 300 * time.Second
	}
	c.g.Go(func(done <-chan struct{}) {
		t := time.NewTimer(time.Hour)
		t.Stop()
		defer t.Stop()
		for {
			select {
			case d := <-lb.arm:
				t.Reset(d)
			case <-t.C:
				c.queue.push(event{"maybeBalancePartitionLeaders", c.maybeBalancePartitionLeaders})
			case <-done:
				return
			}
		}
	})
}

// maybeScheduleBalance schedules a run if leaders are imbalanced and none
// is scheduled; on the loop, after the images changed (imbalanced is the
// count of the latest image).
func (c *QuorumController) maybeScheduleBalance(imbalanced int64) {
	lb := &c.balance
	if !c.active {
		lb.state = balanceDeferred // a timer still armed finds us inactive
		return
	}
	if lb.interval == 0 || lb.state == balanceScheduled || imbalanced == 0 {
		return
	}
	d := lb.interval
	if lb.state == balanceImmediately {
		d = balanceAgainDelay
	}
	lb.state = balanceScheduled
	select {
	case lb.arm <- d:
	default: // cannot happen: one run is armed at a time
	}
}

// maybeBalancePartitionLeaders runs a scheduled balance; on the loop.
func (c *QuorumController) maybeBalancePartitionLeaders() {
	lb := &c.balance
	if !c.active || lb.state != balanceScheduled {
		return
	}
	start := time.Now()
	recs := c.balanceRecords(c.latest, maxElectionsPerImbalance)
	lb.state = balanceDeferred
	if len(recs) >= maxElectionsPerImbalance {
		lb.state = balanceImmediately
	}
	c.metricsDirty = true // reschedule from this round's count
	if len(recs) == 0 {
		c.log.Debug("maybeBalancePartitionLeaders: no preferred replica can lead yet")
		return
	}
	c.log.Info("maybeBalancePartitionLeaders: moving leadership back to preferred replicas",
		"records", len(recs), "took", time.Since(start), "again_at_once", lb.state == balanceImmediately)
	if _, err := c.appendRecords(recs, func(_ int64, err error) {
		if err != nil {
			c.log.Info("leader balance not committed", "err", err)
		}
	}); err != nil {
		c.log.Warn("leader balance not written", "err", err)
	}
}

// balanceRecords is Kafka's maybeTriggerLeaderChangeForPartitionsWithoutPreferredLeader:
// a PREFERRED election for each partition its preferred replica does not
// lead, at most max of them.
func (c *QuorumController) balanceRecords(im *metadata.Image, max int) []metadata.Record {
	var recs []metadata.Record
	for _, t := range im.Topics() {
		for _, p := range t.Partitions {
			if len(recs) >= max {
				return recs
			}
			if hasPreferredLeader(p) {
				continue
			}
			if r := c.preferredChange(im, t, p); r != nil {
				recs = append(recs, r)
			}
		}
	}
	return recs
}
