package controller

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/broker/metadata"
)

// UpdateFeatures (KIP-584, upgrade types KIP-778) is Kafka's
// QuorumController.updateFeatures with FeatureControlManager.updateFeatures:
// every update is checked in the request's order (a feature named twice
// counts once, with its last level) and the first failure fails the whole
// request with INVALID_UPDATE_VERSION, nothing written; otherwise one
// FeatureLevelRecord per feature is written in one batch, or none with
// validate_only. The checks, with Kafka's messages:
//
//   - the upgrade type is UPGRADE (1), SAFE_DOWNGRADE (2) or
//     UNSAFE_DOWNGRADE (3); v0's allow_downgrade is SAFE_DOWNGRADE;
//   - the level is not negative;
//   - this controller supports it (metadata.SupportedFeatures; a feature
//     it does not list supports level 0 only), and so does every
//     registered broker (the ranges of its BrokerRegistration);
//   - a level below the finalized one needs a downgrade type, one above
//     it UPGRADE;
//   - metadata.version: a downgrade across a version that changed the
//     metadata is refused, safe or unsafe (Kafka supports no unsafe
//     metadata downgrade yet); other features: level 1 and up need
//     metadata.version 4 or later, and the feature's dependencies.
//
// Level 0 removes a feature from the finalized set. A feature name Kafka
// does not define fails with "Feature X not found.". Controllers are
// checked only as brokers: Moldau's controllers are combined nodes and
// register as brokers (Kafka also checks ControllerRegistrations).
func (c *QuorumController) UpdateFeatures(ctx context.Context, req *kmsg.UpdateFeaturesRequest) (*kmsg.UpdateFeaturesResponse, error) {
	resp, _, err := write(ctx, c, "updateFeatures", func(im *metadata.Image) (writeResult[*kmsg.UpdateFeaturesResponse], error) {
		resp := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
		recs, err := c.updateFeatures(im, req)
		if err != nil {
			resp.ErrorCode = apierr.Code(err)
			msg := "The update failed for all features since the following feature had an error: " + err.Error()
			resp.ErrorMessage = &msg
			return writeResult[*kmsg.UpdateFeaturesResponse]{resp: resp}, nil
		}
		if req.Version <= 1 {
			for _, u := range req.FeatureUpdates {
				r := kmsg.NewUpdateFeaturesResponseResult()
				// Kafka's per-feature message on success is
				// Errors.NONE.message(): "NONE".
				r.Feature, r.ErrorMessage = u.Feature, kmsg.StringPtr("NONE")
				resp.Results = append(resp.Results, r)
			}
		}
		if req.ValidateOnly {
			recs = nil
		}
		return writeResult[*kmsg.UpdateFeaturesResponse]{records: recs, resp: resp}, nil
	})
	return resp, err
}

// Kafka's FeatureUpdate.UpgradeType.
const (
	upgradeTypeUpgrade         int8 = 1
	upgradeTypeSafeDowngrade   int8 = 2
	upgradeTypeUnsafeDowngrade int8 = 3
)

type featureUpdate struct {
	name  string
	level int16
	typ   int8
}

func (c *QuorumController) updateFeatures(im *metadata.Image, req *kmsg.UpdateFeaturesRequest) ([]metadata.Record, error) {
	var updates []featureUpdate
	index := map[string]int{}
	for _, u := range req.FeatureUpdates {
		typ := u.UpgradeType
		if req.Version == 0 {
			typ = upgradeTypeUpgrade
			if u.AllowDowngrade {
				typ = upgradeTypeSafeDowngrade
			}
		}
		fu := featureUpdate{u.Feature, u.MaxVersionLevel, typ}
		if i, ok := index[u.Feature]; ok {
			updates[i] = fu
			continue
		}
		index[u.Feature] = len(updates)
		updates = append(updates, fu)
	}
	proposed := map[string]int16{}
	for name, lvl := range im.Features {
		proposed[name] = lvl
	}
	for _, u := range updates {
		proposed[u.name] = u.level
	}
	var recs []metadata.Record
	for _, u := range updates {
		if err := c.checkFeatureUpdate(im, u, proposed); err != nil {
			c.log.Warn("refusing a feature update", "err", err)
			return nil, err
		}
		recs = append(recs, &metadata.FeatureLevelRecord{Name: u.name, FeatureLevel: u.level})
	}
	return recs, nil
}

// checkFeatureUpdate is Kafka's FeatureControlManager.updateFeature.
func (c *QuorumController) checkFeatureUpdate(im *metadata.Image, u featureUpdate, proposed map[string]int16) error {
	invalid := func(format string, args ...any) error {
		return apierr.Errorf(kerr.InvalidUpdateVersion, "Invalid update version %d for feature %s. %s", u.level, u.name, fmt.Sprintf(format, args...))
	}
	if u.typ != upgradeTypeUpgrade && u.typ != upgradeTypeSafeDowngrade && u.typ != upgradeTypeUnsafeDowngrade {
		return invalid("The controller does not support the given upgrade type.")
	}
	current := im.Features[u.name]
	if u.level < 0 {
		return invalid("A feature version cannot be less than 0.")
	}
	if reason := c.reasonNotSupported(im, u.name, u.level); reason != "" {
		return invalid("%s", reason)
	}
	switch {
	case u.level < current && u.typ == upgradeTypeUpgrade:
		return invalid("Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.")
	case u.level > current && u.typ != upgradeTypeUpgrade:
		return invalid("Can't downgrade to a newer version.")
	}
	if u.name == metadata.MetadataVersionFeature {
		return c.checkMetadataVersionUpdate(current, u.level, u.typ == upgradeTypeUnsafeDowngrade)
	}
	if !kafkaFeatures[u.name] {
		return invalid("Feature %s not found.", u.name)
	}
	// Kafka's Features.validateVersion.
	if mv := proposed[metadata.MetadataVersionFeature]; u.level >= 1 && mv < 4 {
		return invalid("%s could not be set to %d because it depends on metadata.version=4 (3.3-IV0)", u.name, u.level)
	}
	for dep, min := range featureDependencies[featureLevel{u.name, u.level}] {
		if proposed[dep] < min {
			return invalid("%s could not be set to %d because it depends on %s level %d", u.name, u.level, dep, min)
		}
	}
	return nil
}

// kafkaFeatures are the features Kafka 4 defines (Features.FEATURES), but
// metadata.version, which is handled on its own.
var kafkaFeatures = map[string]bool{
	metadata.TransactionVersionFeature: true,
	"group.version":                    true,
	"eligible.leader.replicas.version": true,
	"share.version":                    true,
	"streams.version":                  true,
}

type featureLevel struct {
	name  string
	level int16
}

// featureDependencies are Kafka's FeatureVersion.dependencies of the
// levels this software supports: none in Kafka 4.0 (transaction.version
// and eligible.leader.replicas.version; the image enables ELR only on
// metadata.version 23 or later, as Kafka's isElrEnabled).
var featureDependencies = map[featureLevel]map[string]int16{}

// reasonNotSupported is Kafka's FeatureControlManager.reasonNotSupported:
// this controller's range, then every registered broker's; "" when all
// support the level. A feature a node does not list supports only 0.
func (c *QuorumController) reasonNotSupported(im *metadata.Image, name string, level int16) string {
	var local metadata.FeatureRange
	for _, f := range metadata.SupportedFeatures {
		if f.Name == name {
			local = f
		}
	}
	if r := versionRangeReason(level, fmt.Sprintf("Local controller %d", c.cfg.NodeID), local.Min, local.Max); r != "" {
		return r
	}
	for _, b := range im.SortedBrokers() {
		var min, max int16
		for _, f := range b.Features {
			if f.Name == name {
				min, max = f.MinSupportedVersion, f.MaxSupportedVersion
			}
		}
		if r := versionRangeReason(level, fmt.Sprintf("Broker %d", b.ID), min, max); r != "" {
			return r
		}
	}
	return ""
}

// versionRangeReason is Kafka's QuorumFeatures.reasonNotSupported, with
// VersionRange's text.
func versionRangeReason(level int16, what string, min, max int16) string {
	if level >= min && level <= max {
		return ""
	}
	if max == 0 {
		return what + " does not support this feature."
	}
	if min == max {
		return fmt.Sprintf("%s only supports versions %d", what, min)
	}
	return fmt.Sprintf("%s only supports versions %d-%d", what, min, max)
}

// metadataVersionChanged is MetadataVersion.didMetadataChange for the
// levels Moldau supports (7, 3.3-IV3, to 25, 4.0-IV3).
var metadataVersionChanged = map[int16]bool{7: true, 8: true, 11: true, 13: true, 14: true, 15: true, 17: true, 23: true}

// checkMetadataVersionUpdate is Kafka's updateMetadataVersion: a
// downgrade is refused if any version above the target, up to the current
// one, changed the metadata.
func (c *QuorumController) checkMetadataVersionUpdate(current, target int16, unsafe bool) error {
	invalid := func(msg string) error {
		return apierr.Errorf(kerr.InvalidUpdateVersion, "Invalid metadata.version %d. %s", target, msg)
	}
	if target >= current {
		if target > current {
			c.log.Warn("upgrading metadata.version", "from", current, "to", target)
		}
		return nil
	}
	changed := false
	for v := target + 1; v <= current; v++ {
		changed = changed || metadataVersionChanged[v]
	}
	switch {
	case !changed:
		c.log.Warn("downgrading metadata.version", "from", current, "to", target)
		return nil
	case unsafe:
		return invalid("Unsafe metadata downgrade is not supported in this version.")
	default:
		return invalid("Refusing to perform the requested downgrade because it might delete metadata information.")
	}
}
