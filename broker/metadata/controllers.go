package metadata

import (
	"maps"
	"slices"

	"github.com/moldau/moldau/broker/uuid"
)

// RegisterControllerRecordType is Kafka's RegisterControllerRecord key.
const RegisterControllerRecordType RecordType = 27

// Controller is a controller's registration (Kafka's
// ControllerRegistration, KIP-919): the endpoints of its controller
// listeners, which DescribeCluster with the controller endpoint type and
// DescribeQuorum's nodes list.
type Controller struct {
	ID            int32
	IncarnationID uuid.UUID
	Endpoints     []BrokerEndpoint
	Features      []BrokerFeature
}

// Endpoint returns the controller's endpoint on a listener.
func (c *Controller) Endpoint(listener string) (BrokerEndpoint, bool) {
	for _, e := range c.Endpoints {
		if e.Name == listener {
			return e, true
		}
	}
	return BrokerEndpoint{}, false
}

// SortedControllers returns the registered controllers by id.
func (im *Image) SortedControllers() []*Controller {
	out := make([]*Controller, 0, len(im.Controllers))
	for _, id := range slices.Sorted(maps.Keys(im.Controllers)) {
		out = append(out, im.Controllers[id])
	}
	return out
}

// RegisterControllerRecord (key 27, v0) registers a controller.
type RegisterControllerRecord struct {
	ControllerID     int32
	IncarnationID    uuid.UUID
	ZkMigrationReady bool
	EndPoints        []BrokerEndpoint
	Features         []BrokerFeature
}

func (*RegisterControllerRecord) Type() RecordType    { return RegisterControllerRecordType }
func (*RegisterControllerRecord) writeVersion() int16 { return 0 }
func (*RegisterControllerRecord) maxVersion() int16   { return 0 }
func (x *RegisterControllerRecord) encode(w *writer, _ int16) {
	w.i32(x.ControllerID)
	w.uuid(x.IncarnationID)
	w.boolean(x.ZkMigrationReady)
	w.arrayLen(len(x.EndPoints))
	for _, e := range x.EndPoints {
		w.str(e.Name)
		w.str(e.Host)
		w.u16(e.Port)
		w.i16(e.SecurityProtocol)
		w.noTags()
	}
	w.arrayLen(len(x.Features))
	for _, f := range x.Features {
		w.str(f.Name)
		w.i16(f.MinSupportedVersion)
		w.i16(f.MaxSupportedVersion)
		w.noTags()
	}
	w.noTags()
}
func (x *RegisterControllerRecord) decode(r *reader, _ int16) {
	x.ControllerID = r.i32()
	x.IncarnationID = r.uuid()
	x.ZkMigrationReady = r.boolean()
	n := r.arrayLen(6)
	for i := 0; i < n && r.ok(); i++ {
		e := BrokerEndpoint{Name: r.str(), Host: r.str(), Port: r.u16(), SecurityProtocol: r.i16()}
		r.tags(nil)
		x.EndPoints = append(x.EndPoints, e)
	}
	n = r.arrayLen(6)
	for i := 0; i < n && r.ok(); i++ {
		f := BrokerFeature{Name: r.str(), MinSupportedVersion: r.i16(), MaxSupportedVersion: r.i16()}
		r.tags(nil)
		x.Features = append(x.Features, f)
	}
	r.tags(nil)
}
