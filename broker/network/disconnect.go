package network

// ConnectionDisconnectListener is told when a client connection closes
// (Kafka's org.apache.kafka.server.network.ConnectionDisconnectListener):
// the share session cache ends the share sessions opened on it.
//
// OnDisconnect runs on the closing connection's goroutine, once per
// connection, after the connection is closed and unregistered, whatever
// closed it (the peer, an I/O error, idle timeout, the handler, eviction,
// shutdown). It must be cheap for a connection it has nothing for and must
// not block; a panic is logged and swallowed, as Kafka swallows a
// listener's exception, so one listener cannot keep the others from being
// told.
type ConnectionDisconnectListener interface {
	OnDisconnect(connectionID string)
}

// notifyDisconnect tells the listeners that connection id closed.
func (s *SocketServer) notifyDisconnect(id string) {
	for _, l := range s.cfg.DisconnectListeners {
		s.callDisconnectListener(l, id)
	}
}

func (s *SocketServer) callDisconnectListener(l ConnectionDisconnectListener, id string) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("connection disconnect listener failed", "conn", id, "panic", r)
		}
	}()
	l.OnDisconnect(id)
}
