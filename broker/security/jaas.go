package security

import (
	"errors"
	"fmt"
	"strings"
)

// JAAS configuration as Kafka's JaasConfig parses the sasl.jaas.config
// property: one or more entries
//
//	<loginModuleClass> <controlFlag> (<optionName>=<optionValue>)*;
//
// tokenized as java.io.StreamTokenizer does with JaasConfig's settings:
// words are letters, digits, '.', '-', '_' and '$' (starting with a
// letter, '_' or '$'); a token starting with a digit or '.' is a number,
// which is not a value (option1=3 is refused, option1="3" is not);
// quoted strings ('"' or '\'') take Java's escapes; // and /* */ are
// comments; anything else is a one-character token.

// JaasEntry is one login module of a JAAS configuration.
type JaasEntry struct {
	LoginModule string
	ControlFlag string // REQUIRED, REQUISITE, SUFFICIENT or OPTIONAL
	Options     map[string]string
}

// Kafka's login modules, by mechanism.
const (
	PlainLoginModule       = "org.apache.kafka.common.security.plain.PlainLoginModule"
	ScramLoginModule       = "org.apache.kafka.common.security.scram.ScramLoginModule"
	OAuthBearerLoginModule = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
)

// disallowedLoginModules are refused, as Kafka's default
// org.apache.kafka.disallowed.login.modules.
var disallowedLoginModules = []string{"com.sun.security.auth.module.JndiLoginModule", "com.sun.security.auth.module.LdapLoginModule"}

// ParseJaasConfig parses a JAAS configuration (JaasConfig), with Kafka's
// messages for its errors.
func ParseJaasConfig(s string) ([]JaasEntry, error) {
	t := &jaasTokenizer{s: s}
	var out []JaasEntry
	for t.next() != ttEOF {
		e, err := parseJaasEntry(t)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	if len(out) == 0 {
		return nil, errors.New("Login module not specified in JAAS config")
	}
	return out, nil
}

// ParseJaasProperty parses a sasl.jaas.config value, which must hold
// exactly one allowed login module (Kafka's JaasContext.load).
func ParseJaasProperty(s string) (JaasEntry, error) {
	entries, err := ParseJaasConfig(s)
	if err != nil {
		return JaasEntry{}, err
	}
	if len(entries) != 1 {
		return JaasEntry{}, fmt.Errorf("JAAS config property contains %d login modules, should be 1 module", len(entries))
	}
	name := strings.TrimSpace(entries[0].LoginModule)
	for _, d := range disallowedLoginModules {
		if name == d {
			return JaasEntry{}, fmt.Errorf("%s is not allowed", name)
		}
	}
	return entries[0], nil
}

func parseJaasEntry(t *jaasTokenizer) (JaasEntry, error) {
	e := JaasEntry{LoginModule: t.sval, Options: map[string]string{}}
	if t.next() == ttEOF {
		return e, errors.New("Login module control flag not specified in JAAS config")
	}
	if t.sval == "" && t.ttype != ttWord && t.ttype != ttQuote {
		return e, errors.New("Login module control flag is not available in the JAAS config")
	}
	switch f := strings.ToUpper(t.sval); f {
	case "REQUIRED", "REQUISITE", "SUFFICIENT", "OPTIONAL":
		e.ControlFlag = f
	default:
		return e, fmt.Errorf("Invalid login module control flag '%s' in JAAS config", t.sval)
	}
	if e.LoginModule == "" {
		return e, errors.New("Login module not specified in JAAS config")
	}
	for t.next() != ttEOF && t.ttype != ';' {
		key := t.sval
		if t.next() != '=' || t.next() == ttEOF || !t.hasString() {
			return e, fmt.Errorf("Value not specified for key '%s' in JAAS config", key)
		}
		e.Options[key] = t.sval
	}
	if t.ttype != ';' {
		return e, errors.New("JAAS config entry not terminated by semi-colon")
	}
	return e, nil
}

// Token types (StreamTokenizer's TT_*; other values are the character).
const (
	ttEOF    = -1
	ttNumber = -2
	ttWord   = -3
	ttQuote  = '"'
)

type jaasTokenizer struct {
	s     string
	i     int
	ttype int
	sval  string // the word or quoted string; "" otherwise
	str   bool   // sval is a string (word or quoted), as Java's non-null sval
}

func (t *jaasTokenizer) hasString() bool { return t.str }

func isJaasWordStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0xa0 || c == '_' || c == '$'
}

func isJaasWordPart(c byte) bool {
	return isJaasWordStart(c) || c >= '0' && c <= '9' || c == '.' || c == '-'
}

// next reads the next token.
func (t *jaasTokenizer) next() int {
	t.sval, t.str = "", false
	for {
		for t.i < len(t.s) && t.s[t.i] <= ' ' {
			t.i++
		}
		if t.i >= len(t.s) {
			t.ttype = ttEOF
			return t.ttype
		}
		if strings.HasPrefix(t.s[t.i:], "//") {
			for t.i < len(t.s) && t.s[t.i] != '\n' && t.s[t.i] != '\r' {
				t.i++
			}
			continue
		}
		if strings.HasPrefix(t.s[t.i:], "/*") {
			end := strings.Index(t.s[t.i+2:], "*/")
			if end < 0 {
				t.i = len(t.s)
			} else {
				t.i += 2 + end + 2
			}
			continue
		}
		break
	}
	c := t.s[t.i]
	switch {
	case c == '-' && (t.i+1 >= len(t.s) || !(t.s[t.i+1] == '.' || t.s[t.i+1] >= '0' && t.s[t.i+1] <= '9')):
		t.i++
		t.ttype = '-'
	case c >= '0' && c <= '9' || c == '.' || c == '-':
		t.i++
		for t.i < len(t.s) && (t.s[t.i] >= '0' && t.s[t.i] <= '9' || t.s[t.i] == '.') {
			t.i++
		}
		t.ttype = ttNumber
	case isJaasWordStart(c):
		start := t.i
		for t.i < len(t.s) && isJaasWordPart(t.s[t.i]) {
			t.i++
		}
		t.ttype, t.sval, t.str = ttWord, t.s[start:t.i], true
	case c == '"' || c == '\'':
		t.ttype, t.sval, t.str = ttQuote, t.quoted(c), true
	case c == '/':
		// A lone '/' is StreamTokenizer's comment character.
		for t.i < len(t.s) && t.s[t.i] != '\n' && t.s[t.i] != '\r' {
			t.i++
		}
		return t.next()
	default:
		t.i++
		t.ttype = int(c)
	}
	return t.ttype
}

// quoted reads a quoted string from t.i (the quote), with Java's escapes;
// it ends at the closing quote, a line end or the end of the input.
func (t *jaasTokenizer) quoted(q byte) string {
	t.i++
	var b strings.Builder
	for t.i < len(t.s) {
		c := t.s[t.i]
		if c == q {
			t.i++
			return b.String()
		}
		if c == '\n' || c == '\r' {
			return b.String()
		}
		t.i++
		if c != '\\' || t.i >= len(t.s) {
			b.WriteByte(c)
			continue
		}
		c = t.s[t.i]
		t.i++
		switch c {
		case 'a':
			b.WriteByte(7)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		default:
			if c >= '0' && c <= '7' {
				v := int(c - '0')
				max := 2
				if c > '3' {
					max = 1
				}
				for k := 0; k < max && t.i < len(t.s) && t.s[t.i] >= '0' && t.s[t.i] <= '7'; k++ {
					v = v*8 + int(t.s[t.i]-'0')
					t.i++
				}
				b.WriteByte(byte(v))
			} else {
				b.WriteByte(c)
			}
		}
	}
	return b.String()
}
