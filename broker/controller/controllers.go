package controller

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/broker/uuid"
)

// RegisterController records a controller's registration (Kafka's
// ControllerRegistration, API 70, KIP-919): its controller listeners'
// endpoints and supported features, as a RegisterControllerRecord. The
// same registration again writes nothing.
func (c *QuorumController) RegisterController(ctx context.Context, req *kmsg.ControllerRegistrationRequest) (*kmsg.ControllerRegistrationResponse, error) {
	resp := req.ResponseKind().(*kmsg.ControllerRegistrationResponse)
	rec := &metadata.RegisterControllerRecord{ControllerID: req.ControllerID, IncarnationID: uuid.UUID(req.IncarnationID), ZkMigrationReady: req.ZkMigrationReady}
	for _, l := range req.Listeners {
		rec.EndPoints = append(rec.EndPoints, metadata.BrokerEndpoint{Name: l.Name, Host: l.Host, Port: l.Port, SecurityProtocol: l.SecurityProtocol})
	}
	for _, f := range req.Features {
		rec.Features = append(rec.Features, metadata.BrokerFeature{Name: f.Name, MinSupportedVersion: f.MinSupportedVersion, MaxSupportedVersion: f.MaxSupportedVersion})
	}
	_, _, err := write(ctx, c, "registerController", func(im *metadata.Image) (writeResult[struct{}], error) {
		if old := im.Controllers[req.ControllerID]; old != nil && old.IncarnationID == rec.IncarnationID &&
			slices.Equal(old.Endpoints, rec.EndPoints) && slices.Equal(old.Features, rec.Features) {
			return writeResult[struct{}]{}, nil
		}
		c.log.Info("registered controller", "controller", req.ControllerID, "incarnation", rec.IncarnationID.String())
		return writeResult[struct{}]{records: []metadata.Record{rec}}, nil
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}
