package config

import (
	"strings"
	"testing"
)

// An SSL listener loads; its SSL values are the listener's own where set
// (listener.name.<listener>.ssl.*, at any level), else the global ones,
// else Kafka's defaults.
func TestListenerSsl(t *testing.T) {
	c, _, err := Load("", []string{
		"listeners=PLAINTEXT://:9092,INTERNAL://:9093,CONTROLLER://:9094",
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,INTERNAL:SSL,CONTROLLER:SSL",
		"controller.listener.names=CONTROLLER",
		"inter.broker.listener.name=INTERNAL",
		"ssl.keystore.location=/global.p12",
		"ssl.keystore.type=PKCS12",
		"listener.name.internal.ssl.keystore.location=/internal.pem",
		"listener.name.internal.ssl.keystore.type=PEM",
		"listener.name.internal.ssl.client.auth=required",
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.SecurityProtocol("internal"); got != "SSL" {
		t.Errorf("SecurityProtocol(internal) = %q", got)
	}
	if len(c.ControllerListeners) != 1 || c.ControllerListeners[0].Name != "CONTROLLER" {
		t.Errorf("controller listeners %v", c.ControllerListeners)
	}
	in := c.ListenerSsl("INTERNAL")
	for k, want := range map[string]string{
		"ssl.keystore.location": "/internal.pem", "ssl.keystore.type": "PEM", "ssl.client.auth": "required",
		"ssl.protocol": "TLSv1.3", "ssl.endpoint.identification.algorithm": "https", "ssl.truststore.type": "JKS",
	} {
		if in[k] != want {
			t.Errorf("INTERNAL %s = %v, want %s", k, in[k], want)
		}
	}
	if got := strings.Join(in["ssl.enabled.protocols"].([]string), ","); got != "TLSv1.2,TLSv1.3" {
		t.Errorf("ssl.enabled.protocols = %s", got)
	}
	ctl := c.ListenerSsl("CONTROLLER")
	if ctl["ssl.keystore.location"] != "/global.p12" || ctl["ssl.keystore.type"] != "PKCS12" || ctl["ssl.client.auth"] != "none" {
		t.Errorf("CONTROLLER falls back to the global keys: %v", ctl)
	}
	if ctl["ssl.keystore.password"] != nil {
		t.Errorf("unset password = %v", ctl["ssl.keystore.password"])
	}
	// A dynamic per-broker keystore for the listener wins over the static one.
	if err := c.ValidateDynamic("1", map[string]string{"listener.name.internal.ssl.keystore.location": "/new.pem"}); err != nil {
		t.Fatal(err)
	}
	c.SetDynamic("1", map[string]string{"listener.name.internal.ssl.keystore.location": "/new.pem"})
	if got := c.ListenerSsl("INTERNAL")["ssl.keystore.location"]; got != "/new.pem" {
		t.Errorf("after SetDynamic: %v", got)
	}
	// As Kafka: the store keys only per listener, and only per broker.
	if err := c.ValidateDynamic("1", map[string]string{"ssl.keystore.location": "/x"}); err == nil || !strings.Contains(err.Error(), "only per-listener") {
		t.Errorf("global keystore: %v", err)
	}
	if err := c.ValidateDynamic("", map[string]string{"listener.name.internal.ssl.keystore.location": "/x"}); err == nil || !strings.Contains(err.Error(), "broker id must be specified") {
		t.Errorf("cluster default: %v", err)
	}
}
