package config

import "strings"

// The SSL keys Moldau acts on (Kafka's SslConfigs and the SSL part of
// BrokerSecurityConfigs), global and per listener: a listener reads
// listener.name.<listener lower case>.<key> where it is set, at any level,
// else <key> (Kafka's valuesWithPrefixOverride). The other ssl.* keys
// Kafka defines (ssl.provider, ssl.keymanager.algorithm,
// ssl.trustmanager.algorithm, ssl.secure.random.implementation,
// ssl.engine.factory.class) are Java's and only stored. broker/security
// turns the values into a tls.Config per listener.

// SslKeys are the keys a listener's SSL setup reads, by their global names.
var SslKeys = []string{
	"ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
	"ssl.keystore.certificate.chain", "ssl.keystore.key",
	"ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password", "ssl.truststore.certificates",
	"ssl.client.auth", "ssl.enabled.protocols", "ssl.protocol", "ssl.cipher.suites",
	"ssl.endpoint.identification.algorithm", "ssl.principal.mapping.rules",
	"ssl.allow.dn.changes", "ssl.allow.san.changes",
}

// SslStoreKeys are the keystore and truststore keys, the ones a running
// listener applies when they change (Kafka's SslConfigs.RECONFIGURABLE_CONFIGS,
// reconfigured by SslFactory): new handshakes use the new stores.
var SslStoreKeys = []string{
	"ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
	"ssl.keystore.certificate.chain", "ssl.keystore.key",
	"ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password", "ssl.truststore.certificates",
}

var sslDefs = []*Def{
	def("ssl.keystore.type", TypeString, "JKS", Medium, "The file format of the key store file. This is optional for client. The values currently supported are [JKS, PKCS12, PEM].", oneOfIgnoreCase("JKS", "PKCS12", "PEM"), PerBroker),
	def("ssl.keystore.location", TypeString, nil, Medium, "The location of the key store file. This is optional for client and can be used for two-way authentication for client.", PerBroker),
	def("ssl.keystore.password", TypePassword, nil, Medium, "The store password for the key store file. This is optional for client and only needed if 'ssl.keystore.location' is configured. Key store password is not supported for PEM format.", PerBroker),
	def("ssl.key.password", TypePassword, nil, Medium, "The password of the private key in the key store file or the PEM key specified in 'ssl.keystore.key'. (Moldau does not decrypt encrypted PEM keys yet: a PEM key must be unencrypted PKCS#8, PKCS#1 or EC.)", PerBroker),
	def("ssl.keystore.certificate.chain", TypePassword, nil, Medium, "Certificate chain in the format specified by 'ssl.keystore.type'. Default SSL engine factory supports only PEM format with a list of X.509 certificates", PerBroker),
	def("ssl.keystore.key", TypePassword, nil, Medium, "Private key in the format specified by 'ssl.keystore.type'. Default SSL engine factory supports only PEM format with PKCS#8 keys. If the key is encrypted, key password must be specified using 'ssl.key.password'", PerBroker),
	def("ssl.truststore.type", TypeString, "JKS", Medium, "The file format of the trust store file. The values currently supported are [JKS, PKCS12, PEM].", oneOfIgnoreCase("JKS", "PKCS12", "PEM"), PerBroker),
	def("ssl.truststore.location", TypeString, nil, Medium, "The location of the trust store file.", PerBroker),
	def("ssl.truststore.password", TypePassword, nil, Medium, "The password for the trust store file. If a password is not set, trust store file configured will still be used, but integrity checking is disabled. Trust store password is not supported for PEM format.", PerBroker),
	def("ssl.truststore.certificates", TypePassword, nil, Medium, "Trusted certificates in the format specified by 'ssl.truststore.type'. Default SSL engine factory supports only PEM format with X.509 certificates.", PerBroker),
	def("ssl.client.auth", TypeString, "none", Medium, "Configures kafka broker to request client authentication. ssl.client.auth=required: client authentication is required; requested: client authentication is optional (unlike required, the client can choose not to provide authentication information about itself); none: client authentication is not needed.", oneOfIgnoreCase("required", "requested", "none"), PerBroker),
	def("ssl.enabled.protocols", TypeList, "TLSv1.2,TLSv1.3", Medium, "The list of protocols enabled for SSL connections. The default is 'TLSv1.2,TLSv1.3': clients and servers prefer TLSv1.3 if both support it and fall back to TLSv1.2 otherwise. Moldau supports TLSv1.2 and TLSv1.3. Also see the config documentation for `ssl.protocol`.", oneOf("TLSv1.2", "TLSv1.3"), PerBroker),
	def("ssl.protocol", TypeString, "TLSv1.3", Medium, "The SSL protocol used to generate the SSLContext. The default is 'TLSv1.3'. This value should be fine for most use cases. Allowed values are 'TLSv1.2', 'TLSv1.3' and 'TLS' (TLSv1.3). With the default value for this config and 'ssl.enabled.protocols', clients will downgrade to 'TLSv1.2' if the server does not support 'TLSv1.3'. If this config is set to 'TLSv1.2', clients will not use 'TLSv1.3' even if it is one of the values in ssl.enabled.protocols and the server only supports 'TLSv1.3'.", oneOf("TLSv1.2", "TLSv1.3", "TLS"), PerBroker),
	def("ssl.cipher.suites", TypeList, "", Medium, "A list of cipher suites, by their IANA (Java) names, e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256. By default all the available cipher suites are supported. A name Moldau does not know is a start-up error. TLS 1.3's suites cannot be narrowed: a list without any of them disables TLSv1.3.", PerBroker),
	def("ssl.endpoint.identification.algorithm", TypeString, "https", Low, "The endpoint identification algorithm to validate server hostname using server certificate: https verifies that the certificate of the broker a node connects to (inter-broker and controller connections) names its host; empty disables the check.", PerBroker),
	def("ssl.principal.mapping.rules", TypeString, "DEFAULT", Low, "A list of rules for mapping from distinguished name from the client certificate to short name. The rules are evaluated in order and the first rule that matches a principal name is used to map it to a short name. Any later rules in the list are ignored. By default, distinguished name of the X.500 certificate will be the principal. Rules are DEFAULT or RULE:pattern/replacement/[LU], separated by commas; invalid rules are a start-up error."),
	def("ssl.allow.dn.changes", TypeBoolean, false, Low, "Indicates whether changes to the certificate distinguished name should be allowed during a dynamic reconfiguration of certificates or not."),
	def("ssl.allow.san.changes", TypeBoolean, false, Low, "Indicates whether changes to the certificate subject alternative names should be allowed during a dynamic reconfiguration of certificates or not."),
}

// ListenerSslKeys are the keys of a listener's SSL setup in both forms
// (the listener's, then the global), for a Reconfigurable.
func ListenerSslKeys(listener string, keys []string) []string {
	out := make([]string, 0, 2*len(keys))
	for _, k := range keys {
		out = append(out, ListenerKey(listener, k), k)
	}
	return out
}

// ListenerSslValues resolves a listener's SSL values from values keyed as
// ListenerSslKeys (as Get returns them): the listener's form wherever it
// is set, else the global key. The result is keyed by global name.
func ListenerSslValues(listener string, keys []string, values map[string]any) map[string]any {
	out := make(map[string]any, len(keys))
	for _, k := range keys {
		if v := values[ListenerKey(listener, k)]; v != nil {
			out[k] = v
		} else {
			out[k] = values[k]
		}
	}
	return out
}

// ListenerSsl returns the SSL values in effect for a listener, keyed by
// global name (see ListenerSslValues).
func (c *KafkaConfig) ListenerSsl(listener string) map[string]any {
	keys := ListenerSslKeys(listener, SslKeys)
	c.mu.RLock()
	values := c.valuesLocked(keys)
	c.mu.RUnlock()
	return ListenerSslValues(listener, SslKeys, values)
}

// SecurityProtocol is the security protocol of a listener, from
// listener.security.protocol.map (upper case; "" for a listener not in it).
func (c *KafkaConfig) SecurityProtocol(listener string) string {
	return c.ListenerSecurityProtocolMap[strings.ToUpper(listener)]
}
