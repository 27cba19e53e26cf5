package broker

import (
	"fmt"

	"github.com/moldau/moldau/broker/config"
	"github.com/moldau/moldau/broker/network"
	"github.com/moldau/moldau/broker/security"
)

// The wiring of security (Kafka's ChannelBuilders for the listeners and
// the inter-broker and controller clients): an SslFactory per SSL
// listener this node serves, a client-side one for a listener it only
// connects to, the dial functions of the node's own connections, and the
// rotation of key and trust stores through dynamic configs.

// securityProtocolIDs are the ids of RegisterBrokerRecord's endpoints.
var securityProtocolIDs = map[string]int16{"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}

// newSecurity builds the SSL factories and the dial functions to the
// controller listener and the inter-broker listener, before anything
// dials or listens.
func (b *Broker) newSecurity() error {
	cfg := b.cfg
	b.sslFactories = map[string]*security.SslFactory{}
	for _, l := range append(append([]config.Listener(nil), cfg.Listeners...), cfg.ControllerListeners...) {
		if cfg.SecurityProtocol(l.Name) != "SSL" {
			continue
		}
		f, err := security.NewSslFactory(l.Name, security.SslConfigFrom(cfg.ListenerSsl(l.Name)), true)
		if err != nil {
			return err
		}
		b.sslFactories[l.Name] = f
	}
	var err error
	b.interBrokerDial, err = b.dialerTo(cfg.InterBrokerListenerName)
	if err != nil {
		return fmt.Errorf("inter.broker.listener.name: %w", err)
	}
	b.controllerDial = b.opts.Dial
	if len(cfg.ControllerListenerNames) > 0 {
		if b.controllerDial, err = b.dialerTo(cfg.ControllerListenerNames[0]); err != nil {
			return fmt.Errorf("controller.listener.names: %w", err)
		}
	}
	return nil
}

// dialerTo is how this node dials listener on other nodes: Options.Dial,
// with a TLS handshake when the listener is SSL, as Kafka's inter-broker
// clients use that listener's SSL configuration in client mode.
func (b *Broker) dialerTo(listener string) (network.DialFunc, error) {
	if b.cfg.SecurityProtocol(listener) != "SSL" {
		return b.opts.Dial, nil
	}
	f := b.sslFactories[listener]
	if f == nil {
		var err error
		if f, err = security.NewSslFactory(listener, security.SslConfigFrom(b.cfg.ListenerSsl(listener)), false); err != nil {
			return nil, err
		}
		b.sslFactories[listener] = f
	}
	return f.Dialer(b.opts.Dial), nil
}

// channelBuilder is a listener's network.ChannelBuilder (nil: PLAINTEXT).
func (b *Broker) channelBuilder(listener string) network.ChannelBuilder {
	if f := b.sslFactories[listener]; f != nil && b.cfg.SecurityProtocol(listener) == "SSL" {
		return f
	}
	return nil
}

// sslReconfigurables make each SSL factory follow its listener's ssl.*
// keys (Kafka's SslFactory as a Reconfigurable of its channel builder):
// a change is validated by building the new stores (a key store that does
// not load refuses the AlterConfigs) and applies to the handshakes after
// it; connections already established keep their session.
func (b *Broker) sslReconfigurables() []config.Reconfigurable {
	var rs []config.Reconfigurable
	for name, f := range b.sslFactories {
		from := func(values map[string]any) security.SslConfig {
			return security.SslConfigFrom(config.ListenerSslValues(name, config.SslKeys, values))
		}
		rs = append(rs, config.ReconfigurableFunc{
			Keys:     config.ListenerSslKeys(name, config.SslKeys),
			Validate: func(values map[string]any) error { return f.ValidateReconfiguration(from(values)) },
			Apply: func(_, values map[string]any) {
				if err := f.Reconfigure(from(values)); err != nil {
					// Validated, but the files may have changed since.
					b.log.Error("SSL reconfiguration failed; the listener keeps its stores", "listener", name, "err", err)
					return
				}
				attrs := []any{"listener", name}
				if c := f.Certificate(); c != nil {
					attrs = append(attrs, "subject", c.Subject.String(), "serial", c.SerialNumber.String(), "not_after", c.NotAfter)
				}
				b.log.Info("SSL key and trust stores reconfigured: new handshakes use them", attrs...)
			},
		})
	}
	return rs
}
