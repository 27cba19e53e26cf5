package kapi

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Every request the controller channel forwards is answered by
// errorResponse in a response whose codes ResponseErrorCodes reads, so a
// NOT_CONTROLLER answer is always retried (UnregisterBroker's was not,
// and a reassignment test failed on it in CI).
func TestResponseErrorCodesReadEveryErrorResponse(t *testing.T) {
	for _, req := range controllerPlaneRequests() {
		resp := errorResponse(req, kerr.NotController)
		if resp == nil {
			t.Errorf("%s: no error response", kmsg.NameForKey(req.Key()))
			continue
		}
		if !slices.Contains(ResponseErrorCodes(resp), kerr.NotController.Code) {
			t.Errorf("%s: ResponseErrorCodes does not read the error", kmsg.NameForKey(req.Key()))
		}
	}
}

// controllerPlaneRequests is one request of every key the controller
// plane serves but ApiVersions, each naming one resource.
func controllerPlaneRequests() []kmsg.Request {
	var out []kmsg.Request
	for _, v := range controllerAPIVersions {
		if v.key == apiVersionsKey || v.key == 56 { // AlterPartition has its own error path
			continue
		}
		req := kmsg.RequestForKey(v.key)
		switch r := req.(type) {
		case *kmsg.CreateTopicsRequest:
			r.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "t"}}
		case *kmsg.DeleteTopicsRequest:
			r.TopicNames = []string{"t"}
		case *kmsg.CreatePartitionsRequest:
			r.Topics = []kmsg.CreatePartitionsRequestTopic{{Topic: "t"}}
		case *kmsg.AlterConfigsRequest:
			r.Resources = []kmsg.AlterConfigsRequestResource{{ResourceName: "t"}}
		case *kmsg.IncrementalAlterConfigsRequest:
			r.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceName: "t"}}
		case *kmsg.AlterClientQuotasRequest:
			r.Entries = []kmsg.AlterClientQuotasRequestEntry{{}}
		case *kmsg.AlterUserSCRAMCredentialsRequest:
			r.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{{Name: "u"}}
		case *kmsg.CreateACLsRequest:
			r.Creations = []kmsg.CreateACLsRequestCreation{{}}
		case *kmsg.DeleteACLsRequest:
			r.Filters = []kmsg.DeleteACLsRequestFilter{{}}
		}
		out = append(out, req)
	}
	return out
}
