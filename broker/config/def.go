package config

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/broker/apierr"
)

// Type is a config's type, as Kafka's ConfigDef.Type. The values are the
// config_type ids of DescribeConfigs v3+.
type Type int8

const (
	TypeUnknown  Type = 0
	TypeBoolean  Type = 1
	TypeString   Type = 2
	TypeInt      Type = 3
	TypeShort    Type = 4
	TypeLong     Type = 5
	TypeDouble   Type = 6
	TypeList     Type = 7
	TypeClass    Type = 8
	TypePassword Type = 9
)

func (t Type) String() string {
	switch t {
	case TypeBoolean:
		return "BOOLEAN"
	case TypeString:
		return "STRING"
	case TypeInt:
		return "INT"
	case TypeShort:
		return "SHORT"
	case TypeLong:
		return "LONG"
	case TypeDouble:
		return "DOUBLE"
	case TypeList:
		return "LIST"
	case TypeClass:
		return "CLASS"
	case TypePassword:
		return "PASSWORD"
	}
	return "UNKNOWN"
}

// Importance is Kafka's ConfigDef.Importance.
type Importance int8

const (
	High Importance = iota
	Medium
	Low
)

func (i Importance) String() string {
	return [...]string{"high", "medium", "low"}[i]
}

// DynamicMode says whether and where a broker config may be changed with
// AlterConfigs (Kafka's DynamicBrokerConfig update modes).
type DynamicMode int8

const (
	// ReadOnly: only in server.properties; a restart applies a change.
	ReadOnly DynamicMode = iota
	// PerBroker: dynamic, only for the resource "<node.id>".
	PerBroker
	// ClusterWide: dynamic, per broker or as the cluster default ("").
	ClusterWide
)

func (m DynamicMode) String() string {
	return [...]string{"read-only", "per-broker", "cluster-wide"}[m]
}

// Source is where a config value comes from; the values are the
// config_source ids of DescribeConfigs v1+.
type Source int8

const (
	SourceUnknown              Source = 0
	SourceTopic                Source = 1 // TOPIC_CONFIG
	SourceDynamicBroker        Source = 2 // DYNAMIC_BROKER_CONFIG
	SourceDynamicDefaultBroker Source = 3 // DYNAMIC_DEFAULT_BROKER_CONFIG
	SourceStaticBroker         Source = 4 // STATIC_BROKER_CONFIG
	SourceDefault              Source = 5 // DEFAULT_CONFIG
	SourceDynamicBrokerLogger  Source = 6 // DYNAMIC_BROKER_LOGGER_CONFIG
	SourceGroup                Source = 8 // GROUP_CONFIG
)

func (s Source) String() string {
	switch s {
	case SourceTopic:
		return "TOPIC_CONFIG"
	case SourceDynamicBroker:
		return "DYNAMIC_BROKER_CONFIG"
	case SourceDynamicDefaultBroker:
		return "DYNAMIC_DEFAULT_BROKER_CONFIG"
	case SourceStaticBroker:
		return "STATIC_BROKER_CONFIG"
	case SourceDefault:
		return "DEFAULT_CONFIG"
	case SourceDynamicBrokerLogger:
		return "DYNAMIC_BROKER_LOGGER_CONFIG"
	case SourceGroup:
		return "GROUP_CONFIG"
	}
	return "UNKNOWN"
}

// Def is one config definition (Kafka's ConfigDef.ConfigKey).
type Def struct {
	Name       string
	Type       Type
	Default    *string // nil: no default (Kafka's null)
	Doc        string
	Importance Importance
	Validator  Validator // nil: any value of the type
	Dynamic    DynamicMode
	// StoredOnly: Kafka defines the key, and Moldau accepts, stores and
	// reports it, but does not act on it (or not on a change at run
	// time). DescribeConfigs' documentation says so.
	StoredOnly bool
}

// Sensitive reports whether values of the config are hidden (PASSWORD).
func (d *Def) Sensitive() bool { return d.Type == TypePassword }

// Parse parses and validates a value of the config. The error names the
// key, the value and what was expected, on one line.
func (d *Def) Parse(value string) (any, error) {
	v, ok := parseType(d.Type, value)
	if ok && d.Validator != nil {
		ok = d.Validator.valid(v)
	}
	if !ok {
		shown := value
		if d.Sensitive() {
			shown = "[hidden]"
		}
		return nil, &ValueError{Name: d.Name, Value: shown, Expected: d.Expectation()}
	}
	return v, nil
}

// Expectation describes the values the config accepts, for error messages:
// "an integer >= 1", "one of: CreateTime, LogAppendTime".
func (d *Def) Expectation() string {
	if d.Validator != nil {
		return d.Validator.expect(d.Type)
	}
	return typeNoun(d.Type)
}

// ValidValues describes the validator for documentation ("[1,...]").
func (d *Def) ValidValues() string {
	if d.Validator == nil {
		return ""
	}
	return d.Validator.expect(d.Type)
}

// ValueError is a value that does not parse or validate.
type ValueError struct {
	Name, Value, Expected string
}

func (e *ValueError) Error() string {
	return fmt.Sprintf("invalid value %q for configuration %s: expected %s", e.Value, e.Name, e.Expected)
}

func typeNoun(t Type) string {
	switch t {
	case TypeBoolean:
		return "true or false"
	case TypeInt:
		return "an integer"
	case TypeShort:
		return "a 16-bit integer"
	case TypeLong:
		return "an integer"
	case TypeDouble:
		return "a number"
	case TypeList:
		return "a comma-separated list"
	case TypeClass:
		return "a class name"
	}
	return "a string"
}

var commaWithSpace = regexp.MustCompile(`\s*,\s*`)

// parseType converts a string to the Go value of the type, as Kafka's
// ConfigDef.parseType: values are trimmed; lists split on commas.
func parseType(t Type, s string) (any, bool) {
	s = strings.TrimSpace(s)
	switch t {
	case TypeBoolean:
		switch strings.ToLower(s) {
		case "true":
			return true, true
		case "false":
			return false, true
		}
		return nil, false
	case TypeInt:
		n, err := strconv.ParseInt(s, 10, 32)
		return int32(n), err == nil
	case TypeShort:
		n, err := strconv.ParseInt(s, 10, 16)
		return int16(n), err == nil
	case TypeLong:
		n, err := strconv.ParseInt(s, 10, 64)
		return n, err == nil
	case TypeDouble:
		f, err := strconv.ParseFloat(s, 64)
		return f, err == nil && !math.IsNaN(f)
	case TypeList:
		if s == "" {
			return []string{}, true
		}
		return commaWithSpace.Split(s, -1), true
	}
	return s, true
}

// formatValue converts a parsed value back to its string form, as Kafka's
// ConfigDef.convertToString.
func formatValue(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case bool:
		return strconv.FormatBool(v)
	case int16:
		return strconv.FormatInt(int64(v), 10)
	case int32:
		return strconv.FormatInt(int64(v), 10)
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		s := strconv.FormatFloat(v, 'f', -1, 64)
		if !strings.ContainsAny(s, ".eE") {
			s += ".0" // as Java's Double.toString
		}
		return s
	case []string:
		return strings.Join(v, ",")
	case string:
		return v
	}
	return fmt.Sprint(v)
}

func toFloat(v any) (float64, bool) {
	switch v := v.(type) {
	case int16:
		return float64(v), true
	case int32:
		return float64(v), true
	case int64:
		return float64(v), true
	case float64:
		return v, true
	}
	return 0, false
}

// Validator restricts a config's values (Kafka's ConfigDef.Validator).
type Validator interface {
	valid(v any) bool
	expect(t Type) string
}

type rangeValidator struct {
	min, max       float64
	hasMin, hasMax bool
}

func atLeast(min float64) Validator { return rangeValidator{min: min, hasMin: true} }
func between(min, max float64) Validator {
	return rangeValidator{min: min, max: max, hasMin: true, hasMax: true}
}

func (r rangeValidator) valid(v any) bool {
	f, ok := toFloat(v)
	if !ok {
		return false
	}
	return (!r.hasMin || f >= r.min) && (!r.hasMax || f <= r.max)
}

func (r rangeValidator) expect(t Type) string {
	num := func(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
	noun := typeNoun(t)
	switch {
	case r.hasMin && r.hasMax:
		return fmt.Sprintf("%s in [%s, %s]", noun, num(r.min), num(r.max))
	case r.hasMin:
		return fmt.Sprintf("%s >= %s", noun, num(r.min))
	}
	return noun
}

// oneOf accepts a STRING among the values (Kafka's ValidString.in); for a
// LIST, every element must be among them (ValidList.in).
type oneOfValidator struct {
	values     []string
	ignoreCase bool
}

func oneOf(values ...string) Validator { return oneOfValidator{values: values} }
func oneOfIgnoreCase(values ...string) Validator {
	return oneOfValidator{values: values, ignoreCase: true}
}

func (o oneOfValidator) has(s string) bool {
	for _, v := range o.values {
		if s == v || o.ignoreCase && strings.EqualFold(s, v) {
			return true
		}
	}
	return false
}

func (o oneOfValidator) valid(v any) bool {
	switch v := v.(type) {
	case string:
		return o.has(v)
	case []string:
		for _, s := range v {
			if !o.has(s) {
				return false
			}
		}
		return true
	}
	return false
}

func (o oneOfValidator) expect(t Type) string {
	if t == TypeList {
		return "a comma-separated list of: " + strings.Join(o.values, ", ")
	}
	return "one of: " + strings.Join(o.values, ", ")
}

// funcValidator is a custom check with its description.
type funcValidator struct {
	f    func(any) bool
	desc string
}

func (f funcValidator) valid(v any) bool     { return f.f(v) }
func (f funcValidator) expect(t Type) string { return f.desc }

// orValidator accepts what any of its validators accepts.
type orValidator []Validator

func (o orValidator) valid(v any) bool {
	return slices.ContainsFunc(o, func(x Validator) bool { return x.valid(v) })
}

func (o orValidator) expect(t Type) string {
	parts := make([]string, len(o))
	for i, x := range o {
		parts[i] = x.expect(t)
	}
	return strings.Join(parts, ", or ")
}

func invalidConfig(format string, args ...any) error {
	return apierr.Errorf(kerr.InvalidConfig, format, args...)
}

func invalidRequest(format string, args ...any) error {
	return apierr.Errorf(kerr.InvalidRequest, format, args...)
}

// asInvalidConfig turns a ValueError into INVALID_CONFIG, keeping its text.
func asInvalidConfig(err error) error {
	var ve *ValueError
	if errors.As(err, &ve) {
		return apierr.New(kerr.InvalidConfig, err.Error())
	}
	return err
}

func ptr(s string) *string { return &s }
