// Package metadata is the cluster metadata the KRaft way (Kafka's
// org.apache.kafka.image and metadata modules): the metadata records, the
// immutable Image they build, the Delta that turns one image into the next,
// and the Loader that replays the committed metadata log into images and
// hands them to Publishers (the ReplicaManager, the coordinators, the
// dynamic-config publisher, kapi's metadata cache).
//
// # Records
//
// records.go has Kafka's metadata records (TopicRecord, PartitionRecord,
// PartitionChangeRecord, ConfigRecord, RemoveTopicRecord, ProducerIdsRecord,
// RegisterBrokerRecord, BrokerRegistrationChangeRecord, Fence/Unfence,
// FeatureLevelRecord, UnregisterBrokerRecord, NoOpRecord; and, in
// controllers.go, RegisterControllerRecord, the controllers'
// registrations, Image.Controllers) with their API
// keys, versions and fields, encoded as Kafka's MetadataRecordSerde frames
// them (frame version, api key, version, flexible body): each is the value
// of one record, with a null key, in the batches of __cluster_metadata, so
// Kafka's tools can read Moldau's metadata log. Decode never panics and
// never allocates more than a small multiple of its input (fuzzed).
//
// # Images and deltas
//
// An Image is immutable and shared: a Delta copies only the topics,
// brokers and config maps it changes, and Apply publishes a new Image that
// shares the rest with the old one. Replaying a record into a Delta is the
// only way metadata changes, on the controller and on every broker alike;
// a record that does not fit (a partition of an unknown topic, a broker
// epoch that does not match) is an error, and the caller stops applying
// metadata rather than guess. A leader change bumps the partition's leader
// epoch and any change its partition epoch, as Kafka's
// PartitionRegistration.merge does. Image.Records writes an image as the
// records that rebuild it: the content of a metadata snapshot.
//
// # Loader and publishers
//
// The Loader applies each committed batch as one delta and calls every
// Publisher with it, in order, from the quorum's listener goroutine, then
// stores the image where Image() reads it without locks. At start-up it
// first catches up (HoldUntilCaughtUp, CaughtUpTo; Kafka's MetadataLoader
// does the same): the batches committed before this start are replayed
// into an image that is published once, as one delta, when the quorum's
// high watermark is reached, so publishers act on the present only, never
// on states a later batch undid (a topic deleted and created again under
// the same name, a leadership revoked again). A publisher
// installed late first gets the whole current image as one delta from the
// empty image. A snapshot (a follower that fell too far behind) becomes a
// delta that deletes what the snapshot lacks. WaitForOffset lets a request
// wait until this node has seen a write the controller committed.
//
// Lock order: Loader.mu (held while publishers run) before anything a
// publisher takes; Loader.waitMu is a leaf.
package metadata
