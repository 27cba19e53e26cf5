package group

import (
	"testing"
	"time"
)

// A group's configs give its consumer-protocol members their heartbeat
// interval and session timeout; other groups keep the broker's; removing
// them goes back to the broker's.
func TestGroupConfigsApplyToTheirGroup(t *testing.T) {
	ts := newTestShard(t)
	svc := &Service{groupConfigs: groupConfigs{}}
	svc.log = ts.s.log
	ts.gcfgs = &svc.groupConfigs
	ts.s.groupConfigs = ts.gcfgs
	svc.UpdateGroupConfig("g", map[string]string{"consumer.session.timeout.ms": "50000", "consumer.heartbeat.interval.ms": "6000"})

	if r := ts.mustHB(hbReq{group: "g", member: "m1", topics: []string{"foo"}}); r.HeartbeatIntervalMillis != 6000 {
		t.Fatalf("heartbeat interval %d, want the group's 6000", r.HeartbeatIntervalMillis)
	}
	if r := ts.mustHB(hbReq{group: "h", member: "m1", topics: []string{"foo"}}); r.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("heartbeat interval %d, want the broker's 5000", r.HeartbeatIntervalMillis)
	}
	// Past the broker's 45s, within the group's 50s.
	ts.advance(47 * time.Second)
	if !ts.consumer("g").hasMember("m1") || ts.consumer("h").hasMember("m1") {
		t.Fatalf("after 47s: g/m1 %v (session 50s), h/m1 %v (session 45s)", ts.consumer("g").hasMember("m1"), ts.consumer("h").hasMember("m1"))
	}
	ts.advance(4 * time.Second)
	if ts.consumer("g").hasMember("m1") {
		t.Fatal("g/m1 outlived the group's 50s session timeout")
	}

	// A reload restarts the timers with the group's session timeout.
	ts.mustHB(hbReq{group: "g", member: "m2", topics: []string{"foo"}})
	ts.reload()
	ts.advance(47 * time.Second)
	if !ts.consumer("g").hasMember("m2") {
		t.Fatal("after a reload g/m2 expired with the broker's session timeout")
	}

	// Unknown keys and bad values are left out; no configs: the broker's.
	svc.UpdateGroupConfig("g", map[string]string{"streams.session.timeout.ms": "50000", "consumer.heartbeat.interval.ms": "x"})
	if c := ts.gcfgs.get("g"); c != (groupConfig{}) {
		t.Fatalf("%+v", c)
	}
	svc.UpdateGroupConfig("g", map[string]string{"consumer.heartbeat.interval.ms": "7000"})
	if d, hb := ts.s.consumerSessionTimeout("g"), ts.s.consumerHeartbeatInterval("g"); d != 45*time.Second || hb != 7*time.Second {
		t.Fatalf("session %v heartbeat %v", d, hb)
	}
	svc.UpdateGroupConfig("g", nil)
	if hb := ts.s.consumerHeartbeatInterval("g"); hb != 5*time.Second {
		t.Fatalf("heartbeat %v after the configs were removed", hb)
	}
}
