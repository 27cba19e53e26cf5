package kapi

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// errorResponse answers req with err in every place the response has an
// error (Kafka's AbstractRequest.getErrorResponse), for the requests a
// broker forwards to the controller and the controller plane serves, and
// the cluster-wide requests a failed authorization refuses whole. It
// returns nil for a request it does not know.
func errorResponse(req kmsg.Request, err error) kmsg.Response {
	code, msg := ErrorCode(err), ErrorMessage(err)
	if resp := shareStateErrorResponse(req, code, msg); resp != nil {
		return resp
	}
	switch req := req.(type) {
	case *kmsg.FetchRequest:
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = code
		return resp
	case *kmsg.FetchSnapshotRequest:
		resp := req.ResponseKind().(*kmsg.FetchSnapshotResponse)
		resp.ErrorCode = code
		return resp
	case *kmsg.DescribeClusterRequest:
		resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
		resp.ErrorCode, resp.ErrorMessage = code, msg
		return resp
	case *kmsg.ControllerRegistrationRequest:
		resp := req.ResponseKind().(*kmsg.ControllerRegistrationResponse)
		resp.ErrorCode, resp.ErrorMessage = code, msg
		return resp
	case *kmsg.CreateTopicsRequest:
		resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewCreateTopicsResponseTopic()
			st.Topic, st.ErrorCode = rt.Topic, code
			if req.Version >= 1 {
				st.ErrorMessage = msg
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	case *kmsg.DeleteTopicsRequest:
		resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
		add := func(name *string, id [16]byte) {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic, rt.TopicID, rt.ErrorCode = name, id, code
			if req.Version >= 5 {
				rt.ErrorMessage = msg
			}
			resp.Topics = append(resp.Topics, rt)
		}
		if req.Version < 6 {
			for _, n := range req.TopicNames {
				add(&n, [16]byte{})
			}
		} else {
			for _, t := range req.Topics {
				add(t.Topic, t.TopicID)
			}
		}
		return resp
	case *kmsg.CreatePartitionsRequest:
		resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewCreatePartitionsResponseTopic()
			st.Topic, st.ErrorCode, st.ErrorMessage = rt.Topic, code, msg
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	case *kmsg.AlterConfigsRequest:
		resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
		for _, r := range req.Resources {
			rr := kmsg.NewAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode, rr.ErrorMessage = r.ResourceType, r.ResourceName, code, msg
			resp.Resources = append(resp.Resources, rr)
		}
		return resp
	case *kmsg.IncrementalAlterConfigsRequest:
		resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
		for _, r := range req.Resources {
			rr := kmsg.NewIncrementalAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode, rr.ErrorMessage = r.ResourceType, r.ResourceName, code, msg
			resp.Resources = append(resp.Resources, rr)
		}
		return resp
	case *kmsg.AllocateProducerIDsRequest:
		resp := req.ResponseKind().(*kmsg.AllocateProducerIDsResponse)
		resp.ErrorCode, resp.ProducerIDStart = code, -1
		return resp
	case *kmsg.BrokerRegistrationRequest:
		resp := req.ResponseKind().(*kmsg.BrokerRegistrationResponse)
		resp.ErrorCode, resp.BrokerEpoch = code, -1
		return resp
	case *kmsg.BrokerHeartbeatRequest:
		resp := req.ResponseKind().(*kmsg.BrokerHeartbeatResponse)
		resp.ErrorCode, resp.IsFenced = code, true
		return resp
	case *kmsg.AssignReplicasToDirsRequest:
		resp := req.ResponseKind().(*kmsg.AssignReplicasToDirsResponse)
		resp.ErrorCode = code
		return resp
	case *kmsg.AlterClientQuotasRequest:
		resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
		for _, e := range req.Entries {
			re := kmsg.NewAlterClientQuotasResponseEntry()
			re.ErrorCode, re.ErrorMessage = code, msg
			for _, p := range e.Entity {
				rp := kmsg.NewAlterClientQuotasResponseEntryEntity()
				rp.Type, rp.Name = p.Type, p.Name
				re.Entity = append(re.Entity, rp)
			}
			resp.Entries = append(resp.Entries, re)
		}
		return resp
	case *kmsg.AddRaftVoterRequest:
		resp := req.ResponseKind().(*kmsg.AddRaftVoterResponse)
		resp.ErrorCode, resp.ErrorMessage = code, msg
		return resp
	case *kmsg.RemoveRaftVoterRequest:
		resp := req.ResponseKind().(*kmsg.RemoveRaftVoterResponse)
		resp.ErrorCode, resp.ErrorMessage = code, msg
		return resp
	case *kmsg.UpdateRaftVoterRequest:
		resp := req.ResponseKind().(*kmsg.UpdateRaftVoterResponse)
		resp.ErrorCode = code
		return resp
	case *kmsg.DescribeQuorumRequest:
		resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
		resp.ErrorCode = code
		if req.Version >= 2 {
			resp.ErrorMessage = msg
		}
		return resp
	case *kmsg.ElectLeadersRequest:
		// Kafka's ElectLeadersRequest.getErrorResponse: every named
		// partition, and the top-level code from v1.
		resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
		resp.ErrorCode = code
		for _, rt := range req.Topics {
			st := kmsg.NewElectLeadersResponseTopic()
			st.Topic = rt.Topic
			for _, p := range rt.Partitions {
				sp := kmsg.NewElectLeadersResponseTopicPartition()
				sp.Partition, sp.ErrorCode, sp.ErrorMessage = p, code, msg
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	case *kmsg.AlterPartitionAssignmentsRequest:
		// Kafka's AlterPartitionReassignmentsRequest.getErrorResponse.
		resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
		resp.ErrorCode, resp.ErrorMessage = code, msg
		for _, rt := range req.Topics {
			st := kmsg.NewAlterPartitionAssignmentsResponseTopic()
			st.Topic = rt.Topic
			for _, p := range rt.Partitions {
				sp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
				sp.Partition, sp.ErrorCode, sp.ErrorMessage = p.Partition, code, msg
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	case *kmsg.UnregisterBrokerRequest:
		resp := req.ResponseKind().(*kmsg.UnregisterBrokerResponse)
		resp.ErrorCode, resp.ErrorMessage = code, msg
		return resp
	case *kmsg.ListPartitionReassignmentsRequest:
		resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
		resp.ErrorCode, resp.ErrorMessage = code, msg
		return resp
	case *kmsg.UpdateFeaturesRequest:
		resp := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
		resp.ErrorCode, resp.ErrorMessage = code, msg
		return resp
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
		seen := map[string]bool{}
		add := func(user string) {
			if seen[user] {
				return
			}
			seen[user] = true
			r := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
			r.User, r.ErrorCode, r.ErrorMessage = user, code, msg
			resp.Results = append(resp.Results, r)
		}
		for _, d := range req.Deletions {
			add(d.Name)
		}
		for _, u := range req.Upsertions {
			add(u.Name)
		}
		return resp
	case *kmsg.DescribeClientQuotasRequest:
		resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
		resp.ErrorCode, resp.ErrorMessage = code, msg
		return resp
	case *kmsg.DescribeUserSCRAMCredentialsRequest:
		resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
		resp.ErrorCode, resp.ErrorMessage = code, msg
		return resp
	case *kmsg.AlterReplicaLogDirsRequest:
		resp := req.ResponseKind().(*kmsg.AlterReplicaLogDirsResponse)
		for _, d := range req.Dirs {
			for _, t := range d.Topics {
				rt := kmsg.NewAlterReplicaLogDirsResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewAlterReplicaLogDirsResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p, code
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
		}
		return resp
	case *kmsg.DescribeLogDirsRequest:
		resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
		resp.ErrorCode = code
		return resp
	case *kmsg.ListConfigResourcesRequest:
		resp := req.ResponseKind().(*kmsg.ListConfigResourcesResponse)
		resp.ErrorCode = code
		return resp
	case *kmsg.CreateACLsRequest:
		resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
		for range req.Creations {
			r := kmsg.NewCreateACLsResponseResult()
			r.ErrorCode, r.ErrorMessage = code, msg
			resp.Results = append(resp.Results, r)
		}
		return resp
	case *kmsg.DeleteACLsRequest:
		resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
		for range req.Filters {
			r := kmsg.NewDeleteACLsResponseResult()
			r.ErrorCode, r.ErrorMessage = code, msg
			resp.Results = append(resp.Results, r)
		}
		return resp
	case *kmsg.CreateDelegationTokenRequest:
		return createTokenError(req, code, tokenOwner(req, anonymousPrincipal), anonymousPrincipal)
	case *kmsg.RenewDelegationTokenRequest:
		return renewTokenResponse(req, code, -1)
	case *kmsg.ExpireDelegationTokenRequest:
		return expireTokenResponse(req, code, -1)
	case *kmsg.EnvelopeRequest:
		resp := req.ResponseKind().(*kmsg.EnvelopeResponse)
		resp.ErrorCode = code
		return resp
	}
	return nil
}

// ResponseErrorCodes returns every error code in a response to one of the
// requests errorResponse knows: the forwarding channel retries when the
// controller answered NOT_CONTROLLER.
func ResponseErrorCodes(resp kmsg.Response) []int16 {
	var codes []int16
	switch r := resp.(type) {
	case *kmsg.FetchResponse:
		codes = append(codes, r.ErrorCode)
	case *kmsg.FetchSnapshotResponse:
		codes = append(codes, r.ErrorCode)
	case *kmsg.DescribeClusterResponse:
		codes = append(codes, r.ErrorCode)
	case *kmsg.ControllerRegistrationResponse:
		codes = append(codes, r.ErrorCode)
	case *kmsg.CreateTopicsResponse:
		for _, t := range r.Topics {
			codes = append(codes, t.ErrorCode)
		}
	case *kmsg.DeleteTopicsResponse:
		for _, t := range r.Topics {
			codes = append(codes, t.ErrorCode)
		}
	case *kmsg.CreatePartitionsResponse:
		for _, t := range r.Topics {
			codes = append(codes, t.ErrorCode)
		}
	case *kmsg.AlterConfigsResponse:
		for _, t := range r.Resources {
			codes = append(codes, t.ErrorCode)
		}
	case *kmsg.IncrementalAlterConfigsResponse:
		for _, t := range r.Resources {
			codes = append(codes, t.ErrorCode)
		}
	case *kmsg.AllocateProducerIDsResponse:
		codes = append(codes, r.ErrorCode)
	case *kmsg.BrokerRegistrationResponse:
		codes = append(codes, r.ErrorCode)
	case *kmsg.BrokerHeartbeatResponse:
		codes = append(codes, r.ErrorCode)
	case *kmsg.AssignReplicasToDirsResponse:
		codes = append(codes, r.ErrorCode)
		for _, d := range r.Directories {
			for _, t := range d.Topics {
				for _, p := range t.Partitions {
					codes = append(codes, p.ErrorCode)
				}
			}
		}
	case *kmsg.DescribeQuorumResponse:
		codes = append(codes, r.ErrorCode)
	case *kmsg.AddRaftVoterResponse:
		codes = append(codes, r.ErrorCode)
	case *kmsg.RemoveRaftVoterResponse:
		codes = append(codes, r.ErrorCode)
	case *kmsg.UpdateRaftVoterResponse:
		codes = append(codes, r.ErrorCode)
	case *kmsg.AlterClientQuotasResponse:
		for _, e := range r.Entries {
			codes = append(codes, e.ErrorCode)
		}
	case *kmsg.ElectLeadersResponse:
		codes = append(codes, r.ErrorCode)
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				codes = append(codes, p.ErrorCode)
			}
		}
	case *kmsg.UpdateFeaturesResponse:
		codes = append(codes, r.ErrorCode)
	case *kmsg.AlterUserSCRAMCredentialsResponse:
		for _, u := range r.Results {
			codes = append(codes, u.ErrorCode)
		}
	case *kmsg.UnregisterBrokerResponse:
		codes = append(codes, r.ErrorCode)
	case *kmsg.CreateDelegationTokenResponse:
		codes = append(codes, r.ErrorCode)
	case *kmsg.RenewDelegationTokenResponse:
		codes = append(codes, r.ErrorCode)
	case *kmsg.ExpireDelegationTokenResponse:
		codes = append(codes, r.ErrorCode)
	case *kmsg.EnvelopeResponse:
		codes = append(codes, r.ErrorCode)
	case *kmsg.ListPartitionReassignmentsResponse:
		codes = append(codes, r.ErrorCode)
	case *kmsg.AlterPartitionAssignmentsResponse:
		codes = append(codes, r.ErrorCode)
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				codes = append(codes, p.ErrorCode)
			}
		}
	case *kmsg.CreateACLsResponse:
		for _, u := range r.Results {
			codes = append(codes, u.ErrorCode)
		}
	case *kmsg.DeleteACLsResponse:
		for _, u := range r.Results {
			codes = append(codes, u.ErrorCode)
		}
	}
	return codes
}
