package kapi

// AlterClientQuotas, versions 0 to 1.
//
//   - v0: entities (user, client-id, ip; a null name is the default) with
//     quota operations (set a value, or remove it) and validate_only.
//   - v1: flexible.
//
// The controller decides (Kafka's ClientQuotaControlManager: valid entity
// types and combinations, Kafka's quota keys, positive whole values for
// integral keys) and writes ClientQuotaRecords; this broker forwards the
// request and waits until its metadata has the change.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/metadata"
)

func (h *Handler) handleAlterClientQuotas(rc *RequestContext, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.AlterClientQuotasRequest)
	r, err := h.forward(rc.Context(), req, 0)
	if err != nil {
		return errorResponse(req, err)
	}
	resp := r.(*kmsg.AlterClientQuotasResponse)
	if req.ValidateOnly {
		return resp
	}
	// Wait until every change the controller accepted is in this
	// broker's image.
	type want struct {
		e   metadata.QuotaEntity
		ops []kmsg.AlterClientQuotasRequestEntryOp
	}
	var wants []want
	for i, re := range resp.Entries {
		if re.ErrorCode != 0 || i >= len(req.Entries) {
			continue
		}
		var data []metadata.QuotaEntityData
		for _, p := range req.Entries[i].Entity {
			data = append(data, metadata.QuotaEntityData{EntityType: p.Type, EntityName: p.Name})
		}
		if e, ok := metadata.QuotaEntityFrom(data); ok {
			wants = append(wants, want{e, req.Entries[i].Ops})
		}
	}
	if len(wants) > 0 {
		h.waitForMetadata(rc.Context(), 5*time.Second, func(im *metadata.Image) bool {
			for _, w := range wants {
				q := im.ClientQuotas[w.e]
				for _, op := range w.ops {
					v, ok := q[op.Key]
					if op.Remove == ok || !op.Remove && v != op.Value {
						return false
					}
				}
			}
			return true
		})
	}
	return resp
}
