package console

import (
	"fmt"
	"strings"

	"github.com/moldau/moldau/broker/config"
	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/broker/uuid"
)

// The metadata log's records, as Kafka writes them (MetadataRecordSerde:
// a frame version, the record type, its version, its fields), decoded
// with broker/metadata's codec (metadataTopic is its name).
const kindMetadata = "metadata"

// decodeMetadata describes one record of __cluster_metadata in words:
// its type's name and its main fields, topic ids named by names (the
// topic's name, else the id). It never fails: a record the codec cannot
// read says why.
func decodeMetadata(value []byte, names func(uuid.UUID) (string, bool)) InternalEvent {
	e := InternalEvent{Kind: kindMetadata}
	rec, err := metadata.Decode(value)
	if err != nil {
		e.Text = fmt.Sprintf("%d bytes: %v", len(value), err)
		return e
	}
	topic := func(id uuid.UUID) string {
		if n, ok := names(id); ok {
			return n
		}
		return id.String()
	}
	var text string
	switch r := rec.(type) {
	case *metadata.TopicRecord:
		text = fmt.Sprintf("%s, id %s", r.Name, r.TopicID)
	case *metadata.PartitionRecord:
		text = fmt.Sprintf("%s-%d: replicas %v, leader %d, ISR %v, leader epoch %d",
			topic(r.TopicID), r.PartitionID, r.Replicas, r.Leader, r.ISR, r.LeaderEpoch)
	case *metadata.PartitionChangeRecord:
		text = partitionChange(topic(r.TopicID), r)
	case *metadata.RemoveTopicRecord:
		text = topic(r.TopicID)
	case *metadata.ConfigRecord:
		text = configChange(r)
	case *metadata.RegisterBrokerRecord:
		text = fmt.Sprintf("broker %d, epoch %d, %s", r.BrokerID, r.BrokerEpoch, endpoints(r.EndPoints))
		if r.Fenced {
			text += ", fenced"
		}
	case *metadata.RegisterControllerRecord:
		text = fmt.Sprintf("controller %d, %s", r.ControllerID, endpoints(r.EndPoints))
	case *metadata.UnregisterBrokerRecord:
		text = fmt.Sprintf("broker %d, epoch %d", r.BrokerID, r.BrokerEpoch)
	case *metadata.FenceBrokerRecord:
		text = fmt.Sprintf("broker %d, epoch %d", r.ID, r.Epoch)
	case *metadata.UnfenceBrokerRecord:
		text = fmt.Sprintf("broker %d, epoch %d", r.ID, r.Epoch)
	case *metadata.BrokerRegistrationChangeRecord:
		text = fmt.Sprintf("broker %d, epoch %d", r.BrokerID, r.BrokerEpoch)
		switch r.Fenced {
		case 1:
			text += ": fenced"
		case -1:
			text += ": unfenced"
		}
		if r.InControlledShutdown == 1 {
			text += ", in controlled shutdown"
		}
	case *metadata.FeatureLevelRecord:
		text = fmt.Sprintf("%s = %d", r.Name, r.FeatureLevel)
	case *metadata.ProducerIdsRecord:
		text = fmt.Sprintf("broker %d, next producer id %d", r.BrokerID, r.NextProducerID)
	}
	e.Text = strings.TrimPrefix(fmt.Sprintf("%T", rec), "*metadata.")
	if text != "" {
		e.Text += " " + text
	}
	return e
}

// endpoints are a registration's listeners, NAME://host:port.
func endpoints(eps []metadata.BrokerEndpoint) string {
	var out []string
	for _, ep := range eps {
		out = append(out, fmt.Sprintf("%s://%s:%d", ep.Name, ep.Host, ep.Port))
	}
	return strings.Join(out, ",")
}

// partitionChange names what a PartitionChangeRecord changes; its
// fields are absent when unchanged.
func partitionChange(topic string, r *metadata.PartitionChangeRecord) string {
	var parts []string
	switch r.Leader {
	case metadata.NoLeaderChange:
	case metadata.NoLeader:
		parts = append(parts, "no leader")
	default:
		parts = append(parts, fmt.Sprintf("leader %d", r.Leader))
	}
	if r.ISR != nil {
		parts = append(parts, fmt.Sprintf("ISR %v", r.ISR))
	}
	if r.Replicas != nil {
		parts = append(parts, fmt.Sprintf("replicas %v", r.Replicas))
	}
	if r.AddingReplicas != nil {
		parts = append(parts, fmt.Sprintf("adding %v", r.AddingReplicas))
	}
	if r.RemovingReplicas != nil {
		parts = append(parts, fmt.Sprintf("removing %v", r.RemovingReplicas))
	}
	if r.EligibleLeaderReplicas != nil {
		parts = append(parts, fmt.Sprintf("ELR %v", r.EligibleLeaderReplicas))
	}
	if r.LeaderRecoveryState >= 0 {
		parts = append(parts, fmt.Sprintf("leader recovery state %d", r.LeaderRecoveryState))
	}
	if r.Directories != nil {
		parts = append(parts, fmt.Sprintf("log dirs of %d replicas", len(r.Directories)))
	}
	if len(parts) == 0 {
		parts = append(parts, "changed")
	}
	return fmt.Sprintf("%s-%d: %s", topic, r.PartitionID, strings.Join(parts, ", "))
}

// configChange is a ConfigRecord: its resource, and the entry set or
// deleted (a null value).
func configChange(r *metadata.ConfigRecord) string {
	var res string
	switch r.ResourceType {
	case metadata.TopicResource:
		res = "topic " + r.ResourceName
	case metadata.BrokerResource:
		res = "broker " + r.ResourceName
		if r.ResourceName == "" {
			res = "cluster default"
		}
	case metadata.GroupResource:
		res = "group " + r.ResourceName
	default:
		res = fmt.Sprintf("resource %d %s", r.ResourceType, r.ResourceName)
	}
	if r.Value == nil {
		return fmt.Sprintf("%s: %s deleted", res, r.Name)
	}
	if sensitiveConfig(r.Name) {
		return fmt.Sprintf("%s: %s set (sensitive)", res, r.Name)
	}
	return fmt.Sprintf("%s: %s=%s", res, r.Name, *r.Value)
}

// sensitiveConfig reports whether a config's value must not be shown, as
// DescribeConfigs hides it: a password type, or (a listener's own, or a
// name this broker does not know) one that names a password, a secret or
// a JAAS configuration.
func sensitiveConfig(name string) bool {
	if d, ok := config.BrokerDef(name); ok && d.Sensitive() {
		return true
	}
	n := strings.ToLower(name)
	return strings.Contains(n, "password") || strings.Contains(n, "secret") || strings.HasSuffix(n, "jaas.config")
}
