package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// `moldau console --command-config` reaches a cluster over SASL: the
// properties file's security settings are the console's client's, as
// for every other client command. Without them the same console shows
// no brokers.
func TestConsoleCommandConfigSASL(t *testing.T) {
	b := startBroker(t, "", saslListeners(tokenSecret)...)
	seed := b.Addr("SASL").String()
	props := filepath.Join(t.TempDir(), "alice.properties")
	if err := os.WriteFile(props, []byte("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"+
		`sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="alice-secret";`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	start := func(extra ...string) string {
		return runConsole(t, append([]string{"--brokers", seed, "--interval", "200ms"}, extra...)...)
	}
	secured := start("--command-config", props)
	eventually(t, 30*time.Second, func() error {
		s, err := consoleSnapshot(secured)
		if err != nil {
			return err
		}
		if len(s.Brokers) != 1 || !s.Brokers[0].Alive || s.Errors["metadata"] != "" {
			return fmt.Errorf("brokers %+v, errors %v", s.Brokers, s.Errors)
		}
		return nil
	})
	plain := start()
	eventually(t, 30*time.Second, func() error {
		s, err := consoleSnapshot(plain)
		if err != nil {
			return err
		}
		if s.Errors["metadata"] == "" || len(s.Brokers) != 0 {
			return fmt.Errorf("without --command-config: brokers %+v, errors %v", s.Brokers, s.Errors)
		}
		return nil
	})
}
