package kapi

// UpdateFeatures, versions 0 to 2 (KIP-584; upgrade types KIP-778).
//
//   - v0: flexible; each update has a max_version_level and
//     allow_downgrade (a SAFE_DOWNGRADE when set).
//   - v1: upgrade_type (1 UPGRADE, 2 SAFE_DOWNGRADE, 3 UNSAFE_DOWNGRADE)
//     replaces allow_downgrade; validate_only.
//   - v2: no per-feature results on success (the top-level code says
//     it all).
//
// The controller decides (broker/controller, features.go: Kafka's
// FeatureControlManager checks and messages) and writes
// FeatureLevelRecords; a failure is INVALID_UPDATE_VERSION at the top
// level, nothing changed. The broker forwards the request as it came and
// relays the answer once its own metadata has the new levels (bounded by
// timeout_ms), so that ApiVersions here reports them at once.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/metadata"
)

func (h *Handler) handleUpdateFeatures(rc *RequestContext, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.UpdateFeaturesRequest)
	timeout := time.Duration(req.TimeoutMillis) * time.Millisecond
	r, err := h.forward(rc.Context(), req, timeout)
	if err != nil {
		return errorResponse(req, err)
	}
	resp := r.(*kmsg.UpdateFeaturesResponse)
	if resp.ErrorCode != 0 || req.ValidateOnly || len(req.FeatureUpdates) == 0 {
		return resp
	}
	want := map[string]int16{}
	for _, u := range req.FeatureUpdates {
		want[u.Feature] = u.MaxVersionLevel
	}
	h.log.Info("updated features", "levels", want)
	h.waitForMetadata(rc.Context(), timeout, func(im *metadata.Image) bool {
		for name, lvl := range want {
			if im.Features[name] != lvl {
				return false
			}
		}
		return true
	})
	return resp
}
