package controller

import (
	"github.com/moldau/moldau/broker/metadata"
)

// bootstrap runs when a controller activates: a brand-new cluster (no
// metadata.version yet) gets its feature levels and the records of
// Config.Bootstrap (the metadata of a pre-KRaft data dir), in one batch, as
// Kafka's controller writes its bootstrap metadata; an existing cluster
// whose finalized features are older than this software's defaults is
// upgraded to them. On the loop.
func (c *QuorumController) bootstrap() {
	var recs []metadata.Record
	fresh := c.latest.Features[metadata.MetadataVersionFeature] == 0
	for _, f := range metadata.SupportedFeatures {
		if cur := c.latest.Features[f.Name]; cur < f.Default {
			recs = append(recs, &metadata.FeatureLevelRecord{Name: f.Name, FeatureLevel: f.Default})
		}
	}
	if fresh && c.cfg.Bootstrap != nil {
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
