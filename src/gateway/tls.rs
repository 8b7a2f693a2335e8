//! The process-wide TLS crypto provider that the HTTP upstreams and the
//! OAuth sign-ins need, installed once (ring, as for the model providers).

/// rustls needs one process-wide crypto provider; the providers use ring too.
pub fn install_tls_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
