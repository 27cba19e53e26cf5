package controller

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/broker/uuid"
)

// registerWithFeatures registers a broker that supports the given ranges.
func registerWithFeatures(t *testing.T, c *QuorumController, id int32, features []metadata.FeatureRange) {
	t.Helper()
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.BrokerID, req.ClusterID, req.IncarnationID = id, "cluster", uuid.Random()
	for _, f := range features {
		rf := kmsg.NewBrokerRegistrationRequestFeature()
		rf.Name, rf.MinSupportedVersion, rf.MaxSupportedVersion = f.Name, f.Min, f.Max
		req.Features = append(req.Features, rf)
	}
	if _, err := c.RegisterBroker(ctx(t), req); err != nil {
		t.Fatal(err)
	}
}

func updateFeatures(t *testing.T, c *QuorumController, version int16, validateOnly bool, updates ...kmsg.UpdateFeaturesRequestFeatureUpdate) *kmsg.UpdateFeaturesResponse {
	t.Helper()
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.Version, req.ValidateOnly, req.FeatureUpdates = version, validateOnly, updates
	resp, err := c.UpdateFeatures(ctx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func feature(name string, level int16, typ int8) kmsg.UpdateFeaturesRequestFeatureUpdate {
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature, u.MaxVersionLevel, u.UpgradeType = name, level, typ
	return u
}

// FeatureControlManager's checks, in order, with Kafka's messages; each
// step starts from what the ones before left.
func TestUpdateFeatures(t *testing.T) {
	c, f, _ := newTestController(t)
	registerWithFeatures(t, c, 1, metadata.SupportedFeatures)
	tv, mv := metadata.TransactionVersionFeature, metadata.MetadataVersionFeature
	up, safe, unsafe := upgradeTypeUpgrade, upgradeTypeSafeDowngrade, upgradeTypeUnsafeDowngrade
	if lvl := image(t, c).Features[tv]; lvl != 2 {
		t.Fatalf("transaction.version bootstrapped at %d", lvl)
	}
	steps := []struct {
		name         string
		version      int16
		validateOnly bool
		updates      []kmsg.UpdateFeaturesRequestFeatureUpdate
		msg          string // "" for success
		want         map[string]int16
	}{
		{"unknown upgrade type", 1, false, []kmsg.UpdateFeaturesRequestFeatureUpdate{feature(tv, 1, 4)},
			"Invalid update version 1 for feature transaction.version. The controller does not support the given upgrade type.", nil},
		{"negative level", 1, false, []kmsg.UpdateFeaturesRequestFeatureUpdate{feature(tv, -1, safe)},
			"Invalid update version -1 for feature transaction.version. A feature version cannot be less than 0.", nil},
		{"beyond this controller", 1, false, []kmsg.UpdateFeaturesRequestFeatureUpdate{feature(tv, 3, up)},
			"Invalid update version 3 for feature transaction.version. Local controller 1 only supports versions 0-2", nil},
		{"feature nobody supports", 1, false, []kmsg.UpdateFeaturesRequestFeatureUpdate{feature("streams.version", 1, up)},
			"Invalid update version 1 for feature streams.version. Local controller 1 does not support this feature.", nil},
		{"downgrade as an upgrade", 1, false, []kmsg.UpdateFeaturesRequestFeatureUpdate{feature(tv, 1, up)},
			"Invalid update version 1 for feature transaction.version. Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.", nil},
		{"validate only", 1, true, []kmsg.UpdateFeaturesRequestFeatureUpdate{feature(tv, 1, safe)}, "", map[string]int16{tv: 2}},
		{"safe downgrade", 1, false, []kmsg.UpdateFeaturesRequestFeatureUpdate{feature(tv, 1, safe)}, "", map[string]int16{tv: 1}},
		{"upgrade with a downgrade type", 1, false, []kmsg.UpdateFeaturesRequestFeatureUpdate{feature(tv, 2, safe)},
			"Invalid update version 2 for feature transaction.version. Can't downgrade to a newer version.", nil},
		{"register an older broker", 1, true, nil, "", nil},
		{"upgrade beyond a broker", 2, false, []kmsg.UpdateFeaturesRequestFeatureUpdate{feature(tv, 2, up)},
			"Invalid update version 2 for feature transaction.version. Broker 2 only supports versions 0-1", map[string]int16{tv: 1}},
		{"metadata.version across a change", 1, false, []kmsg.UpdateFeaturesRequestFeatureUpdate{feature(mv, 22, safe)},
			"Invalid metadata.version 22. Refusing to perform the requested downgrade because it might delete metadata information.", nil},
		{"metadata.version unsafe", 1, false, []kmsg.UpdateFeaturesRequestFeatureUpdate{feature(mv, 22, unsafe)},
			"Invalid metadata.version 22. Unsafe metadata downgrade is not supported in this version.", nil},
		{"metadata.version without a change between", 1, false, []kmsg.UpdateFeaturesRequestFeatureUpdate{feature(mv, 23, safe)}, "", map[string]int16{mv: 23}},
		{"metadata.version upgrade", 0, false, []kmsg.UpdateFeaturesRequestFeatureUpdate{feature(mv, 25, 0)}, "", map[string]int16{mv: 25}},
		{"one bad update fails all", 1, false, []kmsg.UpdateFeaturesRequestFeatureUpdate{feature(tv, 0, safe), feature(mv, 26, up)},
			"Invalid update version 26 for feature metadata.version. Local controller 1 only supports versions 7-25", map[string]int16{tv: 1}},
		{"unknown feature at 0", 1, false, []kmsg.UpdateFeaturesRequestFeatureUpdate{feature("no.such.version", 0, safe)},
			"Invalid update version 0 for feature no.such.version. Feature no.such.version not found.", nil},
		{"level 0 removes", 2, false, []kmsg.UpdateFeaturesRequestFeatureUpdate{feature(tv, 0, safe)}, "", map[string]int16{tv: 0}},
	}
	for _, s := range steps {
		if s.name == "register an older broker" {
			// Broker 2 supports transaction.version 0 to 1 only.
			registerWithFeatures(t, c, 2, []metadata.FeatureRange{{Name: mv, Min: 7, Max: 25}, {Name: tv, Min: 0, Max: 1}})
		}
		n := logLength(f)
		resp := updateFeatures(t, c, s.version, s.validateOnly, s.updates...)
		if s.msg == "" {
			if resp.ErrorCode != 0 || resp.ErrorMessage != nil {
				t.Fatalf("%s: %v %v", s.name, kerr.ErrorForCode(resp.ErrorCode), *resp.ErrorMessage)
			}
			if s.version <= 1 && len(resp.Results) != len(s.updates) || s.version == 2 && len(resp.Results) != 0 {
				t.Fatalf("%s: results %+v", s.name, resp.Results)
			}
		} else {
			const prefix = "The update failed for all features since the following feature had an error: "
			if resp.ErrorCode != kerr.InvalidUpdateVersion.Code || resp.ErrorMessage == nil || *resp.ErrorMessage != prefix+s.msg || len(resp.Results) != 0 {
				t.Fatalf("%s: %v %v", s.name, kerr.ErrorForCode(resp.ErrorCode), strings.TrimPrefix(*resp.ErrorMessage, prefix))
			}
		}
		if wrote := logLength(f) > n; wrote != (s.msg == "" && !s.validateOnly) {
			t.Fatalf("%s: wrote %v", s.name, wrote)
		}
		im := image(t, c)
		for name, lvl := range s.want {
			if got, ok := im.Features[name]; got != lvl || lvl == 0 && ok {
				t.Fatalf("%s: %s is %d (present %v), want %d", s.name, name, got, ok, lvl)
			}
		}
	}
}

// A level lowered by the operator stays lowered when another controller
// activates: only a brand-new cluster gets this software's defaults.
func TestLoweredFeatureSurvivesFailover(t *testing.T) {
	c, f, _ := newTestController(t)
	setFeature(t, c, metadata.EligibleLeaderReplicasFeature, 0)
	f.elect(2, 2)
	f.elect(3, 1)
	waitActive(t, c)
	register(t, c, 1, nil) // a write after the activation's bootstrap
	if lvl := image(t, c).Features[metadata.EligibleLeaderReplicasFeature]; lvl != 0 {
		t.Fatalf("eligible.leader.replicas.version raised to %d by the next active controller", lvl)
	}
}
