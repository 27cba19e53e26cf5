package broker

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/broker/uuid"
)

// Upgrade from the JSON metadata store of earlier Moldau versions: a data
// dir whose metadata.log.dir holds cluster-metadata.json and whose metadata
// log is new gets the file's topics, partitions, configs and producer-id
// counter as the first records of the log, written by the first active
// controller (with the feature levels, in one batch). The file is then
// renamed cluster-metadata.json.migrated, kept for the operator.

const jsonStoreFile = "cluster-metadata.json"

type jsonStore struct {
	Version int   `json:"version"`
	NodeID  int32 `json:"nodeId"`
	Topics  []struct {
		Name       string            `json:"Name"`
		ID         uuid.UUID         `json:"ID"`
		Configs    map[string]string `json:"Configs"`
		Partitions []struct {
			Index       int32   `json:"Index"`
			Leader      int32   `json:"Leader"`
			LeaderEpoch int32   `json:"LeaderEpoch"`
			Replicas    []int32 `json:"Replicas"`
			ISR         []int32 `json:"ISR"`
		} `json:"Partitions"`
	} `json:"topics"`
	BrokerConfigs  map[string]map[string]string `json:"brokerConfigs"`
	NextProducerID int64                        `json:"nextProducerId"`
}

// migrateJSONStore returns the records of dir's JSON store, or none.
func migrateJSONStore(dir string, log *slog.Logger) ([]metadata.Record, error) {
	path := filepath.Join(dir, jsonStoreFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s for the upgrade: %w", path, err)
	}
	var st jsonStore
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("%s is corrupt, cannot upgrade it: %v", path, err)
	}
	if st.Version != 1 {
		return nil, fmt.Errorf("%s has version %d; this Moldau upgrades version 1", path, st.Version)
	}
	var recs []metadata.Record
	for _, t := range st.Topics {
		recs = append(recs, &metadata.TopicRecord{Name: t.Name, TopicID: t.ID})
		for _, k := range slices.Sorted(maps.Keys(t.Configs)) {
			v := t.Configs[k]
			recs = append(recs, &metadata.ConfigRecord{ResourceType: metadata.TopicResource, ResourceName: t.Name, Name: k, Value: &v})
		}
		for _, p := range t.Partitions {
			recs = append(recs, &metadata.PartitionRecord{
				PartitionID: p.Index, TopicID: t.ID, Replicas: p.Replicas, ISR: p.ISR,
				RemovingReplicas: []int32{}, AddingReplicas: []int32{},
				Leader: p.Leader, LeaderEpoch: p.LeaderEpoch,
			})
		}
	}
	for _, r := range slices.Sorted(maps.Keys(st.BrokerConfigs)) {
		for _, k := range slices.Sorted(maps.Keys(st.BrokerConfigs[r])) {
			v := st.BrokerConfigs[r][k]
			recs = append(recs, &metadata.ConfigRecord{ResourceType: metadata.BrokerResource, ResourceName: r, Name: k, Value: &v})
		}
	}
	if st.NextProducerID > 0 {
		recs = append(recs, &metadata.ProducerIdsRecord{BrokerID: st.NodeID, BrokerEpoch: -1, NextProducerID: st.NextProducerID})
	}
	log.Info("upgrading the JSON cluster metadata to the metadata log", "file", path, "topics", len(st.Topics))
	return recs, nil
}

// retireJSONStore renames the JSON store once its records are committed.
func retireJSONStore(dir string) error {
	path := filepath.Join(dir, jsonStoreFile)
	if err := os.Rename(path, path+".migrated"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
