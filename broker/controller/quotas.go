package controller

import (
	"context"
	"math"
	"net"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/broker/metadata"
)

// Client quotas (Kafka's ClientQuotaControlManager): per user, client id,
// user and client id, or ip, each possibly the default entity.

// quotaKeyType is a quota key's type: integral types must be whole.
type quotaKeyType int

const (
	quotaLong quotaKeyType = iota
	quotaDouble
	quotaInt
)

// userClientQuotaKeys and ipQuotaKeys are Kafka's QuotaConfig keys.
var (
	userClientQuotaKeys = map[string]quotaKeyType{
		"producer_byte_rate":       quotaLong,
		"consumer_byte_rate":       quotaLong,
		"request_percentage":       quotaDouble,
		"controller_mutation_rate": quotaDouble,
	}
	ipQuotaKeys = map[string]quotaKeyType{
		"connection_creation_rate": quotaInt,
	}
)

// AlterClientQuotas sets and removes client quota values, each entity
// independently; with ValidateOnly nothing changes.
func (c *QuorumController) AlterClientQuotas(ctx context.Context, req *kmsg.AlterClientQuotasRequest) (*kmsg.AlterClientQuotasResponse, error) {
	resp, _, err := write(ctx, c, "alterClientQuotas", func(im *metadata.Image) (writeResult[*kmsg.AlterClientQuotasResponse], error) {
		resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
		seen := map[metadata.QuotaEntity]bool{}
		var recs []metadata.Record
		for _, e := range req.Entries {
			var data []metadata.QuotaEntityData
			re := kmsg.NewAlterClientQuotasResponseEntry()
			for _, p := range e.Entity {
				data = append(data, metadata.QuotaEntityData{EntityType: p.Type, EntityName: p.Name})
				rp := kmsg.NewAlterClientQuotasResponseEntryEntity()
				rp.Type, rp.Name = p.Type, p.Name
				re.Entity = append(re.Entity, rp)
			}
			erecs, err := alterQuotaEntity(im, data, e.Ops, seen)
			if err == nil && !req.ValidateOnly {
				recs = append(recs, erecs...)
			}
			re.ErrorCode, re.ErrorMessage = apierr.Code(err), errorMessage(err)
			resp.Entries = append(resp.Entries, re)
		}
		return writeResult[*kmsg.AlterClientQuotasResponse]{records: recs, resp: resp}, nil
	})
	return resp, err
}

func alterQuotaEntity(im *metadata.Image, data []metadata.QuotaEntityData, ops []kmsg.AlterClientQuotasRequestEntryOp, seen map[metadata.QuotaEntity]bool) ([]metadata.Record, error) {
	if len(data) == 0 {
		return nil, apierr.Errorf(kerr.InvalidRequest, "Invalid empty client quota entity")
	}
	for _, d := range data {
		switch d.EntityType {
		case metadata.QuotaUser, metadata.QuotaClientID, metadata.QuotaIP:
		default:
			return nil, apierr.Errorf(kerr.InvalidRequest, "Unhandled client quota entity type: %s", d.EntityType)
		}
		if d.EntityName != nil && *d.EntityName == "" {
			return nil, apierr.Errorf(kerr.InvalidRequest, "Empty %s not supported", d.EntityType)
		}
	}
	entity, ok := metadata.QuotaEntityFrom(data)
	if !ok {
		return nil, apierr.Errorf(kerr.InvalidRequest, "Invalid client quota entity, duplicate entity entry")
	}
	if seen[entity] {
		return nil, apierr.Errorf(kerr.InvalidRequest, "Ignoring duplicate entity %v", data)
	}
	seen[entity] = true
	var keys map[string]quotaKeyType
	switch {
	case entity.IP.Set && (entity.User.Set || entity.ClientID.Set):
		return nil, apierr.Errorf(kerr.InvalidRequest, "Invalid quota entity combination, IP entity should not be combined with User or ClientId")
	case entity.IP.Set:
		if !entity.IP.Default && net.ParseIP(entity.IP.Name) == nil {
			return nil, apierr.Errorf(kerr.InvalidRequest, "%s is not a valid IP or resolvable host.", entity.IP.Name)
		}
		keys = ipQuotaKeys
	default:
		keys = userClientQuotaKeys
	}
	cur := im.ClientQuotas[entity]
	dup := map[string]bool{}
	var recs []metadata.Record
	for _, op := range ops {
		if dup[op.Key] {
			return nil, apierr.Errorf(kerr.InvalidRequest, "Duplicate quota key %s not updating quota for this entity", op.Key)
		}
		dup[op.Key] = true
		if op.Remove {
			if _, had := cur[op.Key]; had {
				recs = append(recs, &metadata.ClientQuotaRecord{Entity: entity.Data(), Key: op.Key, Remove: true})
			}
			continue
		}
		if err := validateQuotaValue(keys, op.Key, op.Value); err != nil {
			return nil, err
		}
		if v, had := cur[op.Key]; !had || v != op.Value {
			recs = append(recs, &metadata.ClientQuotaRecord{Entity: entity.Data(), Key: op.Key, Value: op.Value})
		}
	}
	return recs, nil
}

// validateQuotaValue is Kafka's validateQuotaKeyValue.
func validateQuotaValue(keys map[string]quotaKeyType, key string, v float64) error {
	typ, ok := keys[key]
	if !ok {
		return apierr.Errorf(kerr.InvalidRequest, "Invalid configuration key %s", key)
	}
	if v <= 0 {
		return apierr.Errorf(kerr.InvalidRequest, "Quota %s must be greater than 0", key)
	}
	var limit float64
	switch typ {
	case quotaDouble:
		return nil
	case quotaInt:
		limit = math.MaxInt32
	default:
		limit = math.MaxInt64
	}
	if v > limit {
		return apierr.Errorf(kerr.InvalidRequest, "Proposed value for %s is too large for %s.", key, map[quotaKeyType]string{quotaInt: "an INT", quotaLong: "a LONG"}[typ])
	}
	if math.Abs(math.Mod(v, 1)) > 1e-6 {
		return apierr.Errorf(kerr.InvalidRequest, "%s cannot be a fractional value.", key)
	}
	return nil
}
