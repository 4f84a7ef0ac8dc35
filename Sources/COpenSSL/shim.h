// OpenSSL's libcrypto headers (Debian: libssl-dev), for ES256 developer tokens. Not linked:
// Sources/MusicKit/Tokens/LibCrypto.swift (the only file that imports this module) opens
// libcrypto.so.3 when a token is first signed.
#ifndef MUSICKIT_COPENSSL_SHIM_H
#define MUSICKIT_COPENSSL_SHIM_H
#include <openssl/bio.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#endif
