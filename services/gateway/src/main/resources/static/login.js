// The sign-in page's one behaviour, in a file of its own: the Content-Security-Policy allows no inline script.
if (new URLSearchParams(location.search).get('error')) document.getElementById('login-error').hidden = false;
