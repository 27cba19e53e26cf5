package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BrokerConfig is one entry of a broker's configuration (DescribeConfigs
// of the BROKER resource). Source is Kafka's name for where the value
// comes from (STATIC_BROKER_CONFIG, DYNAMIC_BROKER_CONFIG,
// DEFAULT_CONFIG, ...); Value is null for a sensitive entry or one
// without a value.
type BrokerConfig struct {
	Name      string  `json:"name"`
	Value     *string `json:"value"`
	Source    string  `json:"source"`
	Default   bool    `json:"default"`
	Sensitive bool    `json:"sensitive,omitempty"`
}

// BrokerConfigs is the answer of GET /api/broker/{id}/configs.
type BrokerConfigs struct {
	Broker  int32          `json:"broker"`
	Configs []BrokerConfig `json:"configs"`
}

// configSource is a source of snapshots that can also ask the cluster
// for a broker's configuration (a Poller; a Replay cannot).
type configSource interface {
	BrokerConfigs(ctx context.Context, id int32) (*BrokerConfigs, error)
}

// BrokerConfigs asks the cluster for broker id's configuration, once,
// under the poll timeout. It is safe to call while the poller polls.
func (p *Poller) BrokerConfigs(ctx context.Context, id int32) (*BrokerConfigs, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	p.mu.Lock()
	adm := p.adm
	p.mu.Unlock()
	rcs, err := adm.DescribeBrokerConfigs(ctx, id)
	if err != nil {
		return nil, err
	}
	return brokerConfigsFrom(id, rcs)
}

// brokerConfigsFrom reads a DescribeConfigs answer: the entries set
// anywhere but in the defaults first, then the defaults, each by name.
func brokerConfigsFrom(id int32, rcs kadm.ResourceConfigs) (*BrokerConfigs, error) {
	want := strconv.Itoa(int(id))
	for _, rc := range rcs {
		if rc.Name != want {
			continue
		}
		if rc.Err != nil {
			return nil, rc.Err
		}
		out := &BrokerConfigs{Broker: id, Configs: make([]BrokerConfig, 0, len(rc.Configs))}
		for _, c := range rc.Configs {
			out.Configs = append(out.Configs, BrokerConfig{Name: c.Key, Value: c.Value, Source: c.Source.String(),
				Default: c.Source == kmsg.ConfigSourceDefaultConfig, Sensitive: c.Sensitive})
		}
		slices.SortFunc(out.Configs, func(a, b BrokerConfig) int {
			if a.Default != b.Default {
				if b.Default {
					return -1
				}
				return 1
			}
			return strings.Compare(a.Name, b.Name)
		})
		return out, nil
	}
	return nil, fmt.Errorf("DescribeConfigs answered without broker %d", id)
}

// brokerConfigs serves GET /api/broker/{id}/configs: the broker's
// configuration as the cluster tells it now. 400 for an id that is not
// a number, 404 when the console replays a run, 504 when the cluster did
// not answer in time, 502 for any other failure.
func (h *handler) brokerConfigs(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 32)
	if err != nil || id < 0 {
		http.Error(w, "a broker id is a non-negative number", http.StatusBadRequest)
		return
	}
	cs, ok := h.src.(configSource)
	if !ok {
		http.Error(w, "a replay has no cluster to ask for configurations", http.StatusNotFound)
		return
	}
	got, err := cs.BrokerConfigs(r.Context(), int32(id))
	if err != nil {
		code := http.StatusBadGateway
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, kerr.RequestTimedOut) {
			code = http.StatusGatewayTimeout
		}
		http.Error(w, errorText(err), code)
		return
	}
	WriteJSON(w, http.StatusOK, got)
}
