package kapi

// ApiVersions, versions 0 to 5.
//
//   - v0: the list of API keys with min and max versions.
//   - v1: adds throttle_time_ms.
//   - v3: flexible (KIP-482; the request header is v2, but the response
//     header stays v0 for every version, so that a client can always read
//     the answer); the request carries the client software name and
//     version (KIP-511); the response adds supported and finalized
//     features (KIP-584): this software's feature ranges, and the
//     cluster's finalized levels (metadata.version, transaction.version)
//     with the metadata offset as their epoch, as Kafka's KRaft brokers
//     report them; clients read transaction.version 2 as the go-ahead
//     for KIP-890 part 2.
//   - v4: no change on the wire; clients use it to know the broker answers
//     an unknown version with UNSUPPORTED_VERSION and a v0 body.
//   - v5: no change on the wire (KIP-1102, re-bootstrap).
//
// A request for a version above ours is answered with error
// UNSUPPORTED_VERSION in the v0 format, listing our versions (see Handle).

import (
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/metadata"
)

func (h *Handler) handleApiVersions(rc *RequestContext, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.ApiVersionsRequest)
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	if req.Version >= 3 && !validClientSoftware(req.ClientSoftwareName, req.ClientSoftwareVersion) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	resp.ApiKeys = apiKeys(h.image().ShareGroupsEnabled())
	if req.Version >= 3 {
		h.features(resp)
	}
	return resp
}

// features fills the supported and finalized features.
func (h *Handler) features(resp *kmsg.ApiVersionsResponse) {
	for _, f := range metadata.SupportedFeatures {
		sf := kmsg.NewApiVersionsResponseSupportedFeature()
		sf.Name, sf.MinVersion, sf.MaxVersion = f.Name, f.Min, f.Max
		resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
	}
	im := h.image()
	resp.FinalizedFeaturesEpoch = -1
	if len(im.Features) == 0 {
		return
	}
	resp.FinalizedFeaturesEpoch = im.Offset
	for _, name := range slices.Sorted(maps.Keys(im.Features)) {
		if lvl := im.Features[name]; lvl > 0 {
			ff := kmsg.NewApiVersionsResponseFinalizedFeature()
			ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = name, lvl, lvl
			resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
		}
	}
}

func (h *Handler) apiVersionsUnsupported() *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	resp.ApiKeys = apiKeys(h.image().ShareGroupsEnabled())
	return resp
}

// apiKeys is the table as ApiVersions reports it: the share group APIs
// only with shareGroups (share.version finalized).
func apiKeys(shareGroups bool) []kmsg.ApiVersionsResponseApiKey {
	keys := make([]kmsg.ApiVersionsResponseApiKey, 0, len(apis))
	for i := range apis {
		a := &apis[i]
		if a.shareGroups && !shareGroups {
			continue
		}
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = a.key, a.advertisedMin(), a.max
		keys = append(keys, k)
	}
	return keys
}

// validClientSoftware applies Kafka's rule for the KIP-511 fields
// ([a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?): non-empty, letters, digits,
// '.' and '-', starting and ending with a letter or digit.
func validClientSoftware(name, version string) bool {
	return validSoftwareField(name) && validSoftwareField(version)
}

func validSoftwareField(s string) bool {
	if s == "" {
		return false
	}
	alnum := func(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !alnum(c) && c != '.' && c != '-' {
			return false
		}
	}
	return alnum(s[0]) && alnum(s[len(s)-1])
}
