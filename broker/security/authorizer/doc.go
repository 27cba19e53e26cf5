// Package authorizer is Moldau's StandardAuthorizer (Kafka's
// org.apache.kafka.metadata.authorizer.StandardAuthorizer): it decides
// whether a principal, from a host, may perform an operation on a resource,
// from the ACLs in the metadata image (AccessControlEntryRecord), as every
// broker of the cluster sees them.
//
// It is enabled by authorizer.class.name naming Kafka's class
// (org.apache.kafka.metadata.authorizer.StandardAuthorizer); super.users
// (a semicolon-separated list of principals, "User:admin;User:broker")
// are allowed everything, and allow.everyone.if.no.acl.found decides a
// resource that no ACL names at all (default false: denied).
//
// # The decision
//
// As Kafka's StandardAuthorizerData.authorize:
//
//   - An ACL applies when its principal is the request's or User:*, its
//     host is the client's address or *, and its resource pattern matches:
//     LITERAL the exact name, or the wildcard name *; PREFIXED any name
//     that starts with it.
//   - Operations imply others only for ALLOW ACLs: READ, WRITE, DELETE and
//     ALTER imply DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS; ALL
//     matches every operation, for ALLOW and DENY alike. A DENY names the
//     operation it denies (DENY READ does not deny DESCRIBE).
//   - Any applicable DENY wins; else any applicable ALLOW allows; else, if
//     any ACL (of any principal) matched the resource, the request is
//     denied; else allow.everyone.if.no.acl.found decides.
//
// AuthorizeByResourceType is Kafka's Authorizer.authorizeByResourceType
// (used by InitProducerId without a transactional id: may the principal
// write to some topic?).
//
// # Cost
//
// The image's ACL set is immutable and shared by images until an ACL
// record changes it; the authorizer indexes it once per set (by resource
// type; literal names and prefixes in maps), so a decision is a handful of
// map lookups, one per prefix length of the resource name, with no
// allocation, whatever the number of ACLs.
//
// # The denial log
//
// A denial is logged at INFO with Kafka's audit fields ("Principal = ...
// is Denied operation = ... from host = ... on resource = ... for request
// = ... with resourceRefCount = ... based on rule ...") unless the caller
// said not to (Kafka's logIfDenied false, for filtered listings); an
// allowed action is logged at DEBUG when the caller asks (logIfAllowed).
package authorizer
