// Package agentstate points ADK for Go's Agent Engine session service (session/vertexai) at an
// agentstate server.
//
// agentstate serves Google's SessionService over gRPC on the same address as its REST API, so
// ADK for Go's own client works unchanged; only its client options differ from Google's:
//
//	sessions, err := vertexai.NewSessionService(ctx,
//		vertexai.VertexAIServiceConfig{ProjectID: "my-project", Location: "us-central1"},
//		agentstate.ClientOptions("127.0.0.1:8000", os.Getenv("AGENTSTATE_TOKEN"))...)
package agentstate

import (
	"context"

	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// ClientOptions are the options that make a Google Cloud gRPC client (ADK for Go's
// session/vertexai among them) talk to the agentstate server at addr ("host:port") over
// cleartext HTTP/2, sending token (if not empty) as `authorization: Bearer …`.
//
// gRPC-Go sends no call credentials over a connection without transport security, so the token
// travels as a per-call credential that declares it needs none. That is right on loopback or a
// private network you trust; anywhere else put TLS in front of the server and use Google's own
// options instead (option.WithEndpoint and option.WithTokenSource).
func ClientOptions(addr, token string) []option.ClientOption {
	opts := []option.ClientOption{
		option.WithEndpoint(addr),
		option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())),
	}
	if token != "" {
		opts = append(opts, option.WithGRPCDialOption(grpc.WithPerRPCCredentials(bearer(token))))
	}
	return opts
}

// bearer is a token sent on every call, over any transport.
type bearer string

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}

func (bearer) RequireTransportSecurity() bool { return false }

// String keeps the token out of logs that print the option.
func (bearer) String() string { return "agentstate.bearer(…)" }
