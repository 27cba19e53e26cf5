package broker

import (
	"bufio"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/moldau/moldau/broker/uuid"
	"github.com/moldau/moldau/log"
)

// meta.properties, in Kafka's KRaft format (version=1): node.id,
// cluster.id and directory.id, in every log dir. A new dir is formatted on
// first start (as `kafka-storage format` would); an existing one must agree
// on node.id and cluster.id, or start-up stops, because mixing dirs of two
// brokers or clusters loses data.
const metaPropertiesFile = "meta.properties"

func ensureMetaProperties(dirs []string, nodeID int32, newClusterID string) (clusterID string, err error) {
	if len(dirs) == 0 {
		return "", fmt.Errorf("log.dirs is empty")
	}
	found := make(map[string]map[string]string)
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", fmt.Errorf("log dir %s: %w", d, err)
		}
		props, err := readProperties(filepath.Join(d, metaPropertiesFile))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return "", err
		}
		if id := props["node.id"]; id != strconv.Itoa(int(nodeID)) {
			return "", fmt.Errorf("%s: stored node.id %s does not match configured node.id %d", filepath.Join(d, metaPropertiesFile), id, nodeID)
		}
		cid := props["cluster.id"]
		if cid == "" {
			return "", fmt.Errorf("%s: no cluster.id", filepath.Join(d, metaPropertiesFile))
		}
		if clusterID != "" && cid != clusterID {
			return "", fmt.Errorf("log dirs belong to different clusters: %s and %s", clusterID, cid)
		}
		clusterID = cid
		found[d] = props
	}
	if clusterID == "" {
		clusterID = newClusterID
	}
	if clusterID == "" {
		clusterID = uuid.Random().String()
	}
	for _, d := range dirs {
		if found[d] != nil {
			continue
		}
		body := fmt.Sprintf("#\n#Written by Moldau\nnode.id=%d\ndirectory.id=%s\nversion=1\ncluster.id=%s\n", nodeID, uuid.Random().String(), clusterID)
		if err := log.WriteFileAtomic(log.OSFS{}, filepath.Join(d, metaPropertiesFile), []byte(body)); err != nil {
			return "", err
		}
	}
	return clusterID, nil
}

// metaDirectoryID is the directory.id of dir's meta.properties.
func metaDirectoryID(dir string) (uuid.UUID, error) {
	props, err := readProperties(filepath.Join(dir, metaPropertiesFile))
	if err != nil {
		return uuid.Zero, err
	}
	return uuid.Parse(props["directory.id"])
}

func readProperties(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	props := make(map[string]string)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("%s: malformed line %q", path, line)
		}
		props[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return props, sc.Err()
}

// clusterIDFrom derives a cluster id from a string (the voters): the first
// 16 bytes of its SHA-256, as a version-8 UUID in Kafka's form.
func clusterIDFrom(s string) string {
	sum := sha256.Sum256([]byte("moldau-cluster:" + s))
	var u uuid.UUID
	copy(u[:], sum[:16])
	u[6] = u[6]&0x0f | 0x80
	u[8] = u[8]&0x3f | 0x80
	if u.String()[0] == '-' {
		u[0] ^= 0x80
	}
	return u.String()
}

func sortedInts(v []int) []int {
	slices.Sort(v)
	return v
}
