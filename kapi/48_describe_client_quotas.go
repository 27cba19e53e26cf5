package kapi

// DescribeClientQuotas, versions 0 to 1.
//
//   - v0: filter components (entity type; match exact name, the default,
//     or any) and strict; the entities that match, with their values.
//   - v1: flexible.
//
// Answered from this broker's metadata image, as Kafka's
// ClientQuotasImage.describe: an empty, repeated or unknown entity type, a
// match string where none belongs (or none where one does), or ip mixed
// with user or client-id are request errors (INVALID_REQUEST, or
// UNSUPPORTED_VERSION for an unknown type or match type). With strict, an
// entity matches only if it has exactly the filtered types.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/broker/metadata"
)

func (h *Handler) handleDescribeClientQuotas(rc *RequestContext, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.DescribeClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	exact, any, err := quotaFilter(req.Components)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = ErrorCode(err), ErrorMessage(err)
		return resp
	}
	im := h.image()
	for _, e := range im.SortedQuotaEntities() {
		data := e.Data()
		if !quotaEntityMatches(data, exact, any, req.Strict) {
			continue
		}
		re := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, d := range data {
			ent := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			ent.Type, ent.Name = d.EntityType, d.EntityName
			re.Entity = append(re.Entity, ent)
		}
		for k, v := range im.ClientQuotas[e] {
			val := kmsg.NewDescribeClientQuotasResponseEntryValue()
			val.Key, val.Value = k, v
			re.Values = append(re.Values, val)
		}
		resp.Entries = append(resp.Entries, re)
	}
	return resp
}

// quotaFilter turns the filter components into exact matches (type to a
// name, nil for the default) and types that must be present.
func quotaFilter(components []kmsg.DescribeClientQuotasRequestComponent) (map[string]*string, map[string]bool, error) {
	exact, any := map[string]*string{}, map[string]bool{}
	for _, c := range components {
		if c.EntityType == "" {
			return nil, nil, apierr.Errorf(kerr.InvalidRequest, "Invalid empty entity type.")
		}
		if _, dup := exact[c.EntityType]; dup || any[c.EntityType] {
			return nil, nil, apierr.Errorf(kerr.InvalidRequest, "Entity type %s cannot appear more than once in the filter.", c.EntityType)
		}
		switch c.EntityType {
		case metadata.QuotaUser, metadata.QuotaClientID, metadata.QuotaIP:
		default:
			return nil, nil, apierr.Errorf(kerr.UnsupportedVersion, "Unsupported entity type %s", c.EntityType)
		}
		switch c.MatchType {
		case kmsg.QuotasMatchTypeExact:
			if c.Match == nil {
				return nil, nil, apierr.Errorf(kerr.InvalidRequest, "Request specified MATCH_TYPE_EXACT, but set match string to null.")
			}
			exact[c.EntityType] = c.Match
		case kmsg.QuotasMatchTypeDefault:
			if c.Match != nil {
				return nil, nil, apierr.Errorf(kerr.InvalidRequest, "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")
			}
			exact[c.EntityType] = nil
		case kmsg.QuotasMatchTypeAny:
			if c.Match != nil {
				return nil, nil, apierr.Errorf(kerr.InvalidRequest, "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.")
			}
			any[c.EntityType] = true
		default:
			return nil, nil, apierr.Errorf(kerr.UnsupportedVersion, "Unknown match type %d", c.MatchType)
		}
	}
	has := func(t string) bool { _, ok := exact[t]; return ok || any[t] }
	if has(metadata.QuotaIP) && (has(metadata.QuotaUser) || has(metadata.QuotaClientID)) {
		return nil, nil, apierr.Errorf(kerr.InvalidRequest, "Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component.")
	}
	return exact, any, nil
}

func quotaEntityMatches(data []metadata.QuotaEntityData, exact map[string]*string, any map[string]bool, strict bool) bool {
	if strict && len(data) != len(exact)+len(any) {
		return false
	}
	names := map[string]*string{}
	for _, d := range data {
		names[d.EntityType] = d.EntityName
	}
	for t, want := range exact {
		got, ok := names[t]
		if !ok || (got == nil) != (want == nil) || got != nil && *got != *want {
			return false
		}
	}
	for t := range any {
		if _, ok := names[t]; !ok {
			return false
		}
	}
	return true
}
