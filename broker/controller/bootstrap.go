package controller

import (
	"github.com/moldau/moldau/broker/metadata"
)

// bootstrap runs when a controller activates: a brand-new cluster (no
// metadata.version yet) gets this software's default feature levels and
// the records of Config.Bootstrap (the metadata of a pre-KRaft data dir),
// in one batch, as Kafka's controller writes its bootstrap metadata. An
// existing cluster keeps the levels it finalized, as Kafka's does: a
// newer level is the operator's to set with UpdateFeatures
// (kafka-features.sh upgrade), and one lowered that way stays lowered.
// On the loop.
func (c *QuorumController) bootstrap() {
	if c.latest.Features[metadata.MetadataVersionFeature] != 0 {
		return
	}
	var recs []metadata.Record
	for _, f := range metadata.SupportedFeatures {
		if f.Default > 0 {
			recs = append(recs, &metadata.FeatureLevelRecord{Name: f.Name, FeatureLevel: f.Default})
		}
	}
	if c.cfg.Bootstrap != nil {
		more, err := c.cfg.Bootstrap()
		if err != nil {
			c.fail(err)
			return
		}
		recs = append(recs, more...)
		if len(more) > 0 {
			c.log.Info("bootstrapping the cluster metadata", "records", len(more))
		}
	}
	if len(recs) == 0 {
		return
	}
	if _, err := c.appendRecords(recs, func(_ int64, err error) {
		if err != nil {
			c.log.Warn("writing the bootstrap metadata failed; the next active controller retries", "err", err)
		}
	}); err != nil {
		c.log.Warn("writing the bootstrap metadata failed", "err", err)
	}
}
