// Package redact finds secrets in text and replaces them with markers such
// as [REDACTED:anthropic-key]. The flight recorder and the tracing
// extension share it, so that a journal, a bundle and an exported span
// hide the same things.
//
// # Built-in rules
//
// The built-in rules apply in this order; each marker names its rule:
//
//   - private-key: a whole PEM private key block, from
//     "-----BEGIN … PRIVATE KEY-----" to "-----END … PRIVATE KEY-----"
//     (RSA, EC, DSA, OPENSSH, ENCRYPTED, PGP … BLOCK); an unterminated
//     block to the end of its base64 body;
//   - anthropic-key and openai-key: provider API keys (sk-ant-…, sk-…,
//     sk-proj-…);
//   - url-password: the password of a URL or connection string
//     (postgres://user:pass@host, mysql://, redis://:pass@host,
//     https://user:pass@host); the scheme, user and host stay;
//   - bearer-token: the token after "Bearer";
//   - aws-access-key and aws-secret-key: AWS access key IDs (AKIA…,
//     ASIA…) and a 40-character secret near "aws … secret";
//   - secret-json-field: the string value of a JSON member whose name looks
//     sensitive ("api_key": "…"), in plain text as well as in JSON text
//     that is itself inside a JSON string (\"api_key\": \"…\");
//   - secret-assignment: the value assigned to a name that looks sensitive,
//     quoted ("…", '…', \"…\") or not, in the forms of environment files
//     and shells (DB_PASSWORD=…, export X="…"), YAML (client_secret: …),
//     TOML (api_key = '…'), query strings (?api_key=…&token=…), HTTP
//     headers (X-Api-Key: …, Authorization: Basic …) and code (=>, :=).
//     Numbers, true, false, null, nil and none are left alone, so that
//     JSON stays valid.
//
// A name looks sensitive ([SensitiveName]) when it contains "key", "token",
// "secret" or "passw" (password, passwd), in any case, except counters
// ("…tokens") and the prompt-cache prefix key; in an assignment or header
// in text, a name containing "authorization" is sensitive too.
//
// # Cost
//
// A single pass over the bytes looks for the words the rules start from
// (sk-, bearer, akia, asia, aws, -----BEGIN, a "://" followed by
// "user:password@", key, token, secret, passw, authorization); text
// without any is returned as is, without allocating, and only the rules
// whose words were seen run. A redacted text is redacted again until it
// no longer changes, so redaction is idempotent.
package redact
