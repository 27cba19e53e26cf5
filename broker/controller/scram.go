package controller

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/broker/security/scram"
)

// SCRAM credentials (Kafka's ScramControlManager): an upsertion carries
// the client's salt and salted password, from which the controller
// derives the stored and server keys (the password never reaches the
// log); a deletion names a user and mechanism that must exist. A user
// named twice in one request (deletions and upsertions together) fails
// with DUPLICATE_RESOURCE; the request's other users go ahead, their
// records in one batch.

// AlterUserScramCredentials applies deletions and upsertions.
func (c *QuorumController) AlterUserScramCredentials(ctx context.Context, req *kmsg.AlterUserSCRAMCredentialsRequest) (*kmsg.AlterUserSCRAMCredentialsResponse, error) {
	resp, _, err := write(ctx, c, "alterUserScramCredentials", func(im *metadata.Image) (writeResult[*kmsg.AlterUserSCRAMCredentialsResponse], error) {
		resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
		recs := AlterScram(im, req, resp)
		return writeResult[*kmsg.AlterUserSCRAMCredentialsResponse]{records: recs, resp: resp}, nil
	})
	return resp, err
}

// AlterScram decides an AlterUserScramCredentials request against im,
// filling resp and returning the records; exported for the bootstrap
// credentials (serve --add-scram), which follow the same rules.
func AlterScram(im *metadata.Image, req *kmsg.AlterUserSCRAMCredentialsRequest, resp *kmsg.AlterUserSCRAMCredentialsResponse) []metadata.Record {
	type change struct {
		user string
		recs []metadata.Record
		err  error
	}
	var order []string
	byUser := map[string]*change{}
	add := func(user string, rec func() (metadata.Record, error)) {
		ch := byUser[user]
		if ch == nil {
			ch = &change{user: user}
			byUser[user] = ch
			order = append(order, user)
		} else if ch.err == nil {
			ch.err = apierr.New(kerr.DuplicateResource, "A user credential cannot be altered twice in the same request")
		}
		if ch.err != nil {
			return
		}
		r, err := rec()
		if err != nil {
			ch.err = err
			return
		}
		ch.recs = append(ch.recs, r)
	}
	for _, d := range req.Deletions {
		add(d.Name, func() (metadata.Record, error) {
			if _, err := checkScramUser(d.Name, d.Mechanism); err != nil {
				return nil, err
			}
			if _, ok := im.Scram[metadata.ScramKey{User: d.Name, Mechanism: d.Mechanism}]; !ok {
				return nil, apierr.New(kerr.ResourceNotFound, "Attempt to delete a user credential that does not exist")
			}
			return &metadata.RemoveUserScramCredentialRecord{Name: d.Name, Mechanism: d.Mechanism}, nil
		})
	}
	for _, u := range req.Upsertions {
		add(u.Name, func() (metadata.Record, error) {
			m, err := checkScramUser(u.Name, u.Mechanism)
			if err != nil {
				return nil, err
			}
			switch {
			case u.Iterations < m.MinIterations:
				return nil, apierr.New(kerr.UnacceptableCredential, "Too few iterations")
			case u.Iterations > scram.MaxIterations:
				return nil, apierr.New(kerr.UnacceptableCredential, "Too many iterations")
			}
			cred := m.CredentialFromSalted(u.SaltedPassword, u.Salt, u.Iterations)
			return &metadata.UserScramCredentialRecord{Name: u.Name, Mechanism: u.Mechanism, Salt: cred.Salt,
				StoredKey: cred.StoredKey, ServerKey: cred.ServerKey, Iterations: cred.Iterations}, nil
		})
	}
	var recs []metadata.Record
	for _, user := range order {
		ch := byUser[user]
		r := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		r.User = user
		if ch.err != nil {
			r.ErrorCode, r.ErrorMessage = apierr.Code(ch.err), errorMessage(ch.err)
		} else {
			recs = append(recs, ch.recs...)
		}
		resp.Results = append(resp.Results, r)
	}
	return recs
}

// checkScramUser is Kafka's validateScramUsernameAndMechanism.
func checkScramUser(user string, mechanism int8) (scram.Mechanism, error) {
	if user == "" {
		return scram.Mechanism{}, apierr.New(kerr.UnacceptableCredential, "Username must not be empty")
	}
	m, ok := scram.MechanismByType(mechanism)
	if !ok {
		return m, apierr.New(kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism")
	}
	return m, nil
}
