//! Pure policy decisions: grants, their merge and attenuation, the shell analyser, the URL and path guards
