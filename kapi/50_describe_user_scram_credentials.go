package kapi

// DescribeUserScramCredentials, version 0 (flexible).
//
//   - v0: the users to describe (null or empty: every user with a
//     credential); each result lists the user's mechanisms and
//     iterations, never the salt or keys.
//
// Answered from this broker's image, as Kafka's KRaft brokers answer from
// their ScramImage, with its messages: a user named twice is
// DUPLICATE_RESOURCE, a user without credentials RESOURCE_NOT_FOUND.

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/metadata"
)

func (h *Handler) handleDescribeUserScramCredentials(rc *RequestContext, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	im := h.image()
	byUser := map[string][]kmsg.DescribeUserSCRAMCredentialsResponseResultCredentialInfo{}
	for _, k := range im.SortedScramKeys() {
		ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
		ci.Mechanism, ci.Iterations = k.Mechanism, im.Scram[k].Iterations
		byUser[k.User] = append(byUser[k.User], ci)
	}
	var users []string
	dup := map[string]bool{}
	if len(req.Users) == 0 {
		users = sortedScramUsers(im)
	} else {
		for _, u := range req.Users {
			if slices.Contains(users, u.Name) {
				dup[u.Name] = true
				continue
			}
			users = append(users, u.Name)
		}
	}
	for _, u := range users {
		r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		r.User = u
		switch {
		case dup[u]:
			r.ErrorCode = kerr.DuplicateResource.Code
			r.ErrorMessage = strPtr("Cannot describe SCRAM credentials for the same user twice in a single request: " + u)
		case len(byUser[u]) == 0:
			r.ErrorCode = kerr.ResourceNotFound.Code
			r.ErrorMessage = strPtr("Attempt to describe a user credential that does not exist: " + u)
		default:
			r.CredentialInfos = byUser[u]
		}
		resp.Results = append(resp.Results, r)
	}
	return resp
}

func sortedScramUsers(im *metadata.Image) []string {
	var users []string
	for _, k := range im.SortedScramKeys() {
		if len(users) == 0 || users[len(users)-1] != k.User {
			users = append(users, k.User)
		}
	}
	return users
}

func strPtr(s string) *string { return &s }
