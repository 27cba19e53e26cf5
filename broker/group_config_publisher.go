package broker

import (
	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/coordinator/group"
)

// groupConfigPublisher hands the group configs of the metadata (GROUP
// resources, type 32) to the group coordinator (Kafka's
// DynamicConfigPublisher with its GroupConfigHandler, calling
// GroupCoordinator.updateGroupConfig). Installed late, or after a
// snapshot, it gets every group resource of the image as a change, so the
// configs survive restarts; a removed resource comes with no configs.
type groupConfigPublisher struct{ groups *group.Service }

func (p *groupConfigPublisher) Name() string { return "GroupConfigPublisher" }

func (p *groupConfigPublisher) OnMetadataUpdate(d *metadata.Delta, im *metadata.Image) {
	for _, r := range d.ChangedConfigs() {
		if r.Type == metadata.GroupResource {
			p.groups.UpdateGroupConfig(r.Name, im.GroupConfigs(r.Name))
		}
	}
}
