package uuid

import "testing"

func TestRoundTrip(t *testing.T) {
	for range 1000 {
		u := Random()
		if u.IsZero() || u == MetadataTopicID || u.String()[0] == '-' || len(u.String()) != 22 {
			t.Fatalf("bad random UUID %s", u)
		}
		v, err := Parse(u.String())
		if err != nil || v != u {
			t.Fatalf("Parse(%s) = %s, %v", u, v, err)
		}
	}
	// Kafka's METADATA_TOPIC_ID prints as AAAAAAAAAAAAAAAAAAAAAQ.
	if MetadataTopicID.String() != "AAAAAAAAAAAAAAAAAAAAAQ" {
		t.Fatal(MetadataTopicID.String())
	}
	if _, err := Parse("short"); err == nil {
		t.Fatal("Parse accepted a short string")
	}
}
