package security

import (
	"crypto/x509"
	"fmt"
	"regexp"
	"strings"
)

// Principals as Kafka's DefaultKafkaPrincipalBuilder names them.
const (
	// Anonymous is the principal of a PLAINTEXT connection and of an SSL
	// connection whose client sent no certificate.
	Anonymous = "User:ANONYMOUS"
	userType  = "User:"
)

// SslPrincipalMapper maps the distinguished name of a client certificate
// to a short name with ssl.principal.mapping.rules (Kafka's
// SslPrincipalMapper): a comma-separated list of DEFAULT (the DN itself)
// and RULE:pattern/replacement/[LU] (if the whole DN matches pattern, the
// DN with pattern replaced by replacement, lower- or upper-cased). The
// first rule that applies names the principal; none applying is an
// error, which fails the connection's authentication.
//
// Patterns are Go regular expressions (RE2), which accept the Java
// patterns such rules use (groups, classes, lazy quantifiers), not
// backreferences or lookaround. The replacement is Java's: $n is group n
// (the longest number not above the group count; a group that does not
// exist is the literal text), \c is c. One difference from Java's
// replaceAll: an empty match right after a match is not replaced again.
type SslPrincipalMapper struct {
	rules []principalRule
}

type principalRule struct {
	isDefault        bool
	pattern          *regexp.Regexp // anchored: the whole DN must match
	find             *regexp.Regexp // as written: what is replaced
	source, replace  string
	toLower, toUpper bool
}

// Kafka's RULE_PATTERN and RULE_SPLITTER. Go's leftmost-first matching
// picks what Java's backtracking does for these expressions.
const rulePattern = `(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)`

var (
	ruleSplitter = regexp.MustCompile(`\s*(` + rulePattern + `)\s*(,\s*|$)`)
	ruleParser   = regexp.MustCompile(`^(?:` + rulePattern + `)`)
)

// NewSslPrincipalMapper parses ssl.principal.mapping.rules; the error
// says which rule is invalid, as Kafka's.
func NewSslPrincipalMapper(rules string) (*SslPrincipalMapper, error) {
	m := &SslPrincipalMapper{}
	for _, sm := range ruleSplitter.FindAllStringSubmatch(strings.TrimSpace(rules), -1) {
		rule := sm[1]
		p := ruleParser.FindStringSubmatchIndex(rule)
		if p == nil {
			return nil, fmt.Errorf("Invalid rule: %s", rule)
		}
		if p[1] != len(rule) {
			return nil, fmt.Errorf("Invalid rule: `%s`, unmatched substring: `%s`", rule, rule[p[1]:])
		}
		group := func(i int) (string, bool) {
			if p[2*i] < 0 {
				return "", false
			}
			return rule[p[2*i]:p[2*i+1]], true
		}
		if _, ok := group(1); ok {
			m.rules = append(m.rules, principalRule{isDefault: true})
			continue
		}
		pat, ok := group(2)
		if !ok {
			continue // an empty rule is ignored
		}
		repl, _ := group(4)
		flag, _ := group(6)
		r := principalRule{source: pat, replace: repl, toLower: flag == "L", toUpper: flag == "U"}
		var err error
		if r.find, err = regexp.Compile(pat); err != nil {
			return nil, fmt.Errorf("Invalid rule: %s: %v", rule, err)
		}
		r.pattern = regexp.MustCompile(`^(?:` + pat + `)$`)
		m.rules = append(m.rules, r)
	}
	return m, nil
}

// Name maps a distinguished name (RFC 2253) to its short name.
func (m *SslPrincipalMapper) Name(dn string) (string, error) {
	for _, r := range m.rules {
		if name, ok := r.apply(dn); ok {
			return name, nil
		}
	}
	return "", fmt.Errorf("No rules apply to %s, rules %s", dn, m)
}

// String is Kafka's toString: SslPrincipalMapper(rules = [...]).
func (m *SslPrincipalMapper) String() string {
	parts := make([]string, len(m.rules))
	for i, r := range m.rules {
		parts[i] = r.String()
	}
	return "SslPrincipalMapper(rules = [" + strings.Join(parts, ", ") + "])"
}

func (r principalRule) String() string {
	if r.isDefault {
		return "DEFAULT"
	}
	s := "RULE:" + r.source + "/" + r.replace
	switch {
	case r.toLower:
		s += "/L"
	case r.toUpper:
		s += "/U"
	}
	return s
}

func (r principalRule) apply(dn string) (string, bool) {
	if r.isDefault {
		return dn, true
	}
	if !r.pattern.MatchString(dn) {
		return "", false
	}
	var b strings.Builder
	last := 0
	for _, m := range r.find.FindAllStringSubmatchIndex(dn, -1) {
		b.WriteString(dn[last:m[0]])
		expandJava(&b, r.replace, dn, m)
		last = m[1]
	}
	b.WriteString(dn[last:])
	out := b.String()
	switch {
	case r.toLower:
		out = strings.ToLower(out)
	case r.toUpper:
		out = strings.ToUpper(out)
	}
	return out, true
}

// expandJava appends Java's Matcher.appendReplacement of repl for the
// match m of s, with Kafka's escapeLiteralBackReferences: a group
// reference beyond the group count is literal text.
func expandJava(b *strings.Builder, repl, s string, m []int) {
	groups := len(m)/2 - 1
	for i := 0; i < len(repl); i++ {
		c := repl[i]
		switch {
		case c == '\\' && i+1 < len(repl):
			i++
			b.WriteByte(repl[i])
		case c == '$' && i+1 < len(repl) && isDigit(repl[i+1]):
			ref := int(repl[i+1] - '0')
			if ref > groups {
				b.WriteByte('$') // literal, as Kafka escapes it
				continue
			}
			i++
			for i+1 < len(repl) && isDigit(repl[i+1]) {
				next := ref*10 + int(repl[i+1]-'0')
				if next > groups {
					break
				}
				ref = next
				i++
			}
			if m[2*ref] >= 0 {
				b.WriteString(s[m[2*ref]:m[2*ref+1]])
			}
		default:
			b.WriteByte(c)
		}
	}
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// PrincipalFor is the principal of a TLS connection whose client sent
// chain (nil: no certificate): User:ANONYMOUS without one, else User:
// and the mapped distinguished name of its subject (RFC 2253, as Java's
// X500Principal.getName()).
func (m *SslPrincipalMapper) PrincipalFor(chain []*x509.Certificate) (string, error) {
	if len(chain) == 0 {
		return Anonymous, nil
	}
	name, err := m.Name(chain[0].Subject.String())
	if err != nil {
		return "", err
	}
	return userType + name, nil
}
