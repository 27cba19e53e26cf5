package security

import (
	"fmt"
	"strings"
	"testing"
)

// Kafka's SslPrincipalMapperTest, case by case.
func TestPrincipalMappingRulesValid(t *testing.T) {
	for _, rules := range []string{
		"DEFAULT",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
		"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/",
		"RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L",
		"RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U",
		"RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/",
		"RULE:^CN=([^,DEFAULT,]+)(,.*|$)/$1/",
	} {
		if _, err := NewSslPrincipalMapper(rules); err != nil {
			t.Errorf("%q: %v", rules, err)
		}
	}
}

func TestPrincipalMappingRulesInvalid(t *testing.T) {
	for _, rules := range []string{
		"default",
		"DEFAUL",
		"DEFAULT/L",
		"DEFAULT/U",
		"RULE:CN=(.*?),OU=ServiceUsers.*/$1",
		"rule:^CN=(.*?),OU=ServiceUsers.*$/$1/",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/L",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/U",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/LU",
	} {
		if m, err := NewSslPrincipalMapper(rules); err == nil {
			t.Errorf("%q: accepted as %v", rules, m)
		}
	}
}

func TestSslPrincipalMapper(t *testing.T) {
	m, err := NewSslPrincipalMapper(strings.Join([]string{
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L",
		"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
		"RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U",
		"RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U",
		"DEFAULT",
	}, ", "))
	if err != nil {
		t.Fatal(err)
	}
	for dn, want := range map[string]string{
		"CN=Duke,OU=ServiceUsers,O=Org,C=US":        "duke",
		"CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US": "duke@sme",
		"cn=duke,ou=sme,dc=mycp,dc=com":             "DUKE@SME",
		"cN=duke,OU=JavaSoft,O=Sun Microsystems":    "DUKE",
		"OU=JavaSoft,O=Sun Microsystems,C=US":       "OU=JavaSoft,O=Sun Microsystems,C=US",
	} {
		if got, err := m.Name(dn); err != nil || got != want {
			t.Errorf("Name(%q) = %q, %v; want %q", dn, got, err, want)
		}
	}
}

func TestPrincipalRulesSplitting(t *testing.T) {
	for _, tc := range []struct{ want, rules string }{
		{"[]", ""},
		{"[DEFAULT]", "DEFAULT"},
		{"[RULE:/]", "RULE://"},
		{"[RULE:/.*]", "RULE:/.*/"},
		{"[RULE:/.*/L]", "RULE:/.*/L"},
		{"[RULE:/, DEFAULT]", "RULE://,DEFAULT"},
		{"[RULE:/, DEFAULT]", "  RULE:// ,  DEFAULT  "},
		{"[RULE:   /     , DEFAULT]", "  RULE:   /     / ,  DEFAULT  "},
		{"[RULE:  /     /U, DEFAULT]", "  RULE:  /     /U   ,DEFAULT  "},
		{"[RULE:([A-Z]*)/$1/U, RULE:([a-z]+)/$1, DEFAULT]", "  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  "},
		// empty rules are ignored
		{"[]", ",   , , ,      , , ,   "},
		{"[RULE:/, DEFAULT]", ",,RULE://,,,DEFAULT,,"},
		{"[RULE: /   , DEFAULT]", ",  , RULE: /   /    ,,,   DEFAULT, ,   "},
		{"[RULE:   /  /U, DEFAULT]", "     ,  , RULE:   /  /U    ,,  ,DEFAULT, ,"},
		// escape sequences
		{`[RULE:\/\\\(\)\n\t/\/\/]`, `RULE:\/\\\(\)\n\t/\/\//`},
		{`[RULE:\**\/+/*/L, RULE:\/*\**/**]`, `RULE:\**\/+/*/L,RULE:\/*\**/**/`},
		// rules rule
		{`[RULE:,RULE:,/,RULE:,\//U, RULE:,/RULE:,, RULE:,RULE:,/L,RULE:,/L, RULE:, DEFAULT, /DEFAULT, DEFAULT]`,
			`RULE:,RULE:,/,RULE:,\//U,RULE:,/RULE:,/,RULE:,RULE:,/L,RULE:,/L,RULE:, DEFAULT, /DEFAULT/,DEFAULT`},
	} {
		m, err := NewSslPrincipalMapper(tc.rules)
		if err != nil {
			t.Errorf("%q: %v", tc.rules, err)
			continue
		}
		if got, want := m.String(), fmt.Sprintf("SslPrincipalMapper(rules = %s)", tc.want); got != want {
			t.Errorf("%q:\n got %s\nwant %s", tc.rules, got, want)
		}
	}
}

func TestPrincipalCommaWithWhitespace(t *testing.T) {
	m, err := NewSslPrincipalMapper(`RULE:^CN=((\\, *|\w)+)(,.*|$)/$1/,DEFAULT`)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := m.Name(`CN=Tkac\, Adam,OU=ITZ,DC=geodis,DC=cz`); err != nil || got != `Tkac\, Adam` {
		t.Errorf("got %q, %v", got, err)
	}
}

// Replacement references as Java's appendReplacement with Kafka's
// escaping of references to groups that do not exist.
func TestPrincipalReplacementReferences(t *testing.T) {
	for _, tc := range []struct{ rule, dn, want string }{
		{`RULE:^CN=(.*?),OU=(.*?)$/$2-$1/`, "CN=a,OU=b", "b-a"},
		{`RULE:^CN=(.*?),OU=(.*?)$/$1@$4/`, "CN=a,OU=b", "a@$4"},        // no group 4: literal
		{`RULE:^CN=(.*?),OU=(.*?)$/$12/`, "CN=a,OU=b", "a2"},            // group 1, then "2"
		{`RULE:^CN=(.*?),OU=(.*?)$/\$1$0/`, "CN=a,OU=b", "$1CN=a,OU=b"}, // escaped, and group 0
		{`RULE:^CN=([a-z]+).*$/x$1y/U`, "CN=abc,O=z", "XABCY"},
	} {
		m, err := NewSslPrincipalMapper(tc.rule)
		if err != nil {
			t.Fatalf("%s: %v", tc.rule, err)
		}
		if got, err := m.Name(tc.dn); err != nil || got != tc.want {
			t.Errorf("%s on %s = %q, %v; want %q", tc.rule, tc.dn, got, err, tc.want)
		}
	}
	m, _ := NewSslPrincipalMapper(`RULE:^CN=x$/y/`)
	if _, err := m.Name("CN=z"); err == nil || !strings.Contains(err.Error(), "No rules apply to CN=z") {
		t.Errorf("no rule applying: %v", err)
	}
}
