// OpenSSL's headers (Debian: libssl-dev), for ES256 developer tokens (libcrypto) and TLS
// (libssl). Not linked: Sources/MusicKitCore/Support/OpenSSL.swift (the only file that imports this
// module) opens libcrypto.so.3 when a token is first signed and libssl.so.3 at the first TLS
// connection.
#ifndef MUSICKIT_COPENSSL_SHIM_H
#define MUSICKIT_COPENSSL_SHIM_H
#include <openssl/bio.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#endif
