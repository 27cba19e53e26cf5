package kapi

// AlterUserScramCredentials, version 0 (flexible).
//
//   - v0: deletions (user, mechanism) and upsertions (user, mechanism,
//     iterations, salt, salted password); one result per user.
//
// The controller decides (Kafka's ScramControlManager: a known mechanism,
// a non-empty user, 4096 to 16384 iterations, a user at most once per
// request, a deletion of an existing credential) and writes
// UserScramCredentialRecords; this broker forwards the request and waits
// until its metadata has the accepted changes, so a login right after
// the answer finds the credential.

import (
	"bytes"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/metadata"
)

func (h *Handler) handleAlterUserScramCredentials(rc *RequestContext, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.AlterUserSCRAMCredentialsRequest)
	r, err := h.forward(rc.Context(), req, 0)
	if err != nil {
		return errorResponse(req, err)
	}
	resp := r.(*kmsg.AlterUserSCRAMCredentialsResponse)
	ok := map[string]bool{}
	for _, res := range resp.Results {
		ok[res.User] = res.ErrorCode == 0
	}
	type want struct {
		key     metadata.ScramKey
		present bool
		iters   int32
		salt    []byte
	}
	var wants []want
	for _, d := range req.Deletions {
		if ok[d.Name] {
			wants = append(wants, want{key: metadata.ScramKey{User: d.Name, Mechanism: d.Mechanism}})
		}
	}
	for _, u := range req.Upsertions {
		if ok[u.Name] {
			wants = append(wants, want{metadata.ScramKey{User: u.Name, Mechanism: u.Mechanism}, true, u.Iterations, u.Salt})
		}
	}
	if len(wants) > 0 {
		h.waitForMetadata(rc.Context(), 5*time.Second, func(im *metadata.Image) bool {
			for _, w := range wants {
				c, has := im.Scram[w.key]
				if has != w.present || has && (c.Iterations != w.iters || !bytes.Equal(c.Salt, w.salt)) {
					return false
				}
			}
			return true
		})
	}
	return resp
}
