package config

// Reconfigurable is a part of the broker that applies dynamic broker
// configs at run time (Kafka's BrokerReconfigurable): the handler pool
// (num.io.threads) and the processors (num.network.threads) today; the
// log cleaner (log.cleaner.threads, ...) and the replica fetchers
// (num.replica.fetchers) register one when they exist. Register with
// KafkaConfig.AddReconfigurable.
type Reconfigurable interface {
	// ReconfigurableConfigs names the broker keys it applies.
	ReconfigurableConfigs() []string
	// ValidateReconfiguration checks the values a change would put in
	// effect, one per key of ReconfigurableConfigs, before anything is
	// stored; an error refuses the AlterConfigs (INVALID_REQUEST, with
	// the error's text). It runs only when one of its keys changes value.
	ValidateReconfiguration(newValues map[string]any) error
	// Reconfigure applies a change once it is installed: the values in
	// effect before and after, one per key of ReconfigurableConfigs
	// (bool, string, int16, int32, int64, float64 or []string, as Get
	// returns them). It runs only when one of its keys changed value,
	// without the config's lock, on the goroutine that installed the
	// change; it must not call SetDynamic.
	Reconfigure(oldValues, newValues map[string]any)
}

// AddReconfigurable registers r; the returned function removes it.
func (c *KafkaConfig) AddReconfigurable(r Reconfigurable) (remove func()) {
	reg := &registration{r} // compared by pointer: r need not be comparable
	c.mu.Lock()
	c.reconfigurables = append(c.reconfigurables, reg)
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, x := range c.reconfigurables {
			if x == reg {
				c.reconfigurables = append(c.reconfigurables[:i:i], c.reconfigurables[i+1:]...)
				return
			}
		}
	}
}

// registration is one AddReconfigurable.
type registration struct{ Reconfigurable }

// ReconfigurableFunc adapts functions to Reconfigurable, for a part that
// only needs a callback: validate may be nil.
type ReconfigurableFunc struct {
	Keys     []string
	Validate func(newValues map[string]any) error
	Apply    func(oldValues, newValues map[string]any)
}

func (f ReconfigurableFunc) ReconfigurableConfigs() []string { return f.Keys }

func (f ReconfigurableFunc) ValidateReconfiguration(newValues map[string]any) error {
	if f.Validate == nil {
		return nil
	}
	return f.Validate(newValues)
}

func (f ReconfigurableFunc) Reconfigure(oldValues, newValues map[string]any) {
	f.Apply(oldValues, newValues)
}
