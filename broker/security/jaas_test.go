package security

import (
	"reflect"
	"strings"
	"testing"
)

// Kafka's JaasContextTest cases, through JaasConfig's parser.
func TestParseJaasConfig(t *testing.T) {
	ok := []struct {
		in      string
		module  string
		flag    string
		options map[string]string
	}{
		{"test.testConfigNoOptions required;", "test.testConfigNoOptions", "REQUIRED", map[string]string{}},
		{"test.testControlFlag requisite propName=propValue;", "test.testControlFlag", "REQUISITE", map[string]string{"propName": "propValue"}},
		{"test.testControlFlag sufficient propName=propValue;", "test.testControlFlag", "SUFFICIENT", map[string]string{"propName": "propValue"}},
		{"test.testControlFlag Optional propName=propValue;", "test.testControlFlag", "OPTIONAL", map[string]string{"propName": "propValue"}},
		{`test.testQuotedOptionValue required propName="prop value" propName2="value1 = 1, value2 = 2";`, "test.testQuotedOptionValue", "REQUIRED",
			map[string]string{"propName": "prop value", "propName2": "value1 = 1, value2 = 2"}},
		{`test.testQuotedOptionName required "prop name"=propValue;`, "test.testQuotedOptionName", "REQUIRED", map[string]string{"prop name": "propValue"}},
		{`test.testNumericOptionWithQuotes required option1="3";`, "test.testNumericOptionWithQuotes", "REQUIRED", map[string]string{"option1": "3"}},
		{`org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`,
			PlainLoginModule, "REQUIRED", map[string]string{"username": "admin", "password": "admin-secret", "user_admin": "admin-secret", "user_alice": "alice-secret"}},
		{"// comment\nm required /* c */ a=b-c_d$e 'q'=\"x\\\"y\";", "m", "REQUIRED", map[string]string{"a": "b-c_d$e", "q": `x"y`}},
	}
	for _, c := range ok {
		e, err := ParseJaasProperty(c.in)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if e.LoginModule != c.module || e.ControlFlag != c.flag || !reflect.DeepEqual(e.Options, c.options) {
			t.Errorf("%q: got %+v", c.in, e)
		}
	}
	bad := map[string]string{
		"  required option1=value1;":                              "control flag",
		"test.loginModule option1=value1;":                        "Invalid login module control flag 'option1'",
		"loginModule required option1;":                           "Value not specified for key 'option1'",
		"test.testMissingSemicolon required option1=value1":       "not terminated by semi-colon",
		"test.testNumericOptionWithoutQuotes required option1=3;": "Value not specified for key 'option1'",
		"test.testInvalidControlFlag { option1=3;":                "control flag is not available",
		"":                        "Login module not specified",
		"a required; b required;": "contains 2 login modules, should be 1",
		"com.sun.security.auth.module.JndiLoginModule required;": "is not allowed",
	}
	for in, want := range bad {
		if _, err := ParseJaasProperty(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want an error with %q", in, err, want)
		}
	}
	// Kafka's testMultipleLoginModules: three entries in order.
	es, err := ParseJaasConfig(" test.Module0 required index=Index0 module=Module0; test.Module1 required index=Index1 module=Module1; test.Module2 required index=Index2 module=Module2;")
	if err != nil || len(es) != 3 || es[2].LoginModule != "test.Module2" || es[1].Options["index"] != "Index1" {
		t.Fatalf("multiple modules: %+v, %v", es, err)
	}
}

func FuzzParseJaasConfig(f *testing.F) {
	f.Add(`org.apache.kafka.common.security.plain.PlainLoginModule required username="a" user_a="b";`)
	f.Add("x required a=\"\\0777\\n\";")
	f.Add("/* unterminated")
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = ParseJaasConfig(s)
	})
}
