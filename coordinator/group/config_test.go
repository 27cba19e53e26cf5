package group

import (
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	c := DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for name, mutate := range map[string]func(*Config){
		"classic min above max":      func(c *Config) { c.ClassicMinSessionTimeout = time.Hour },
		"consumer session below min": func(c *Config) { c.ConsumerSessionTimeout = time.Second },
		"heartbeat above max":        func(c *Config) { c.ConsumerHeartbeatInterval = time.Minute },
		"heartbeat not below session": func(c *Config) {
			c.ConsumerMaxHeartbeatInterval, c.ConsumerHeartbeatInterval = time.Hour, 50*time.Second
		},
		"classic protocol not in the list": func(c *Config) { c.RebalanceProtocols = []string{"consumer"} },
	} {
		c := DefaultConfig()
		mutate(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
